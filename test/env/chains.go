package env

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sigstore/sigstore/pkg/signature"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ChainsNamespace is where Tekton Chains reads its configuration and its
// signing Secret, as its release installs it.
const ChainsNamespace = "tekton-chains"

// chainsSecretPath is where the Chains controller reads its signing keys;
// it has no flag for another path.
const chainsSecretPath = "/etc/signing-secrets"

// ChainsSignedAnnotation is the annotation Chains sets on a TaskRun or
// PipelineRun once it signed what the run made ("true"), or gave up
// ("failed").
const ChainsSignedAnnotation = "chains.tekton.dev/signed"

// ChainsConfig is chains-config as kiln's docs tell users to set it:
// TaskRuns attested in in-toto (SLSA v0.2 provenance), the images' .sig
// and .att stored next to them in their registry, no transparency log
// (offline), and no PipelineRun artifacts. The one test-only key: the
// test registry is plain HTTP.
//
// PipelineRun artifacts are off (storage "", Chains' way to disable a
// kind: https://github.com/tektoncd/chains/blob/main/docs/config.md).
// Left at Chains' defaults (in-toto, storage tekton) every run carries its
// provenance and signature as base64 annotations of 27 to 57 KB, which
// swamp `tkn pr describe` and the Dashboard's YAML view; and a node-image
// run's images are already covered twice, by the TaskRun attestations
// Chains stores beside them and by kiln's own signature and attestation.
func ChainsConfig() map[string]string {
	return map[string]string{
		"artifacts.taskrun.format":        "in-toto",
		"artifacts.taskrun.storage":       "oci",
		"artifacts.taskrun.signer":        "x509",
		"artifacts.oci.format":            "simplesigning",
		"artifacts.oci.storage":           "oci",
		"artifacts.oci.signer":            "x509",
		"artifacts.pipelinerun.storage":   "",
		"transparency.enabled":            "false",
		"storage.oci.repository.insecure": "true",
	}
}

// ChainsAnnotationPrefix starts every annotation Chains writes on a run.
const ChainsAnnotationPrefix = "chains.tekton.dev/"

// MaxChainsAnnotation bounds one Chains annotation on a PipelineRun under
// ChainsConfig: a status word ("true") or a short reference, never a
// payload or a signature.
const MaxChainsAnnotation = 256

// ChainsOptions configure StartChains.
type ChainsOptions struct {
	// Config is the chains-config ConfigMap's data (artifacts.*, storage.*).
	Config map[string]string
}

// Chains is a running Tekton Chains controller.
type Chains struct {
	// PublicKey is the public half of its x509 signing key, PEM.
	PublicKey []byte
	// Verifier checks signatures made with that key.
	Verifier signature.Verifier
	proc     *process
}

// Log returns the controller's log so far, for failure messages.
func (c *Chains) Log() string {
	b, _ := os.ReadFile(c.proc.log)
	return string(b)
}

// Errors returns the controller's error lines that mention key (a
// TaskRun's name, say), each cut to 2000 bytes, for failure messages.
func (c *Chains) Errors(key string) string {
	var out []string
	for _, line := range strings.Split(c.Log(), "\n") {
		if strings.Contains(line, `"level":"error"`) && strings.Contains(line, key) {
			out = append(out, line[:min(len(line), 2000)])
		}
	}
	return strings.Join(out, "\n")
}

// StartChains runs Tekton Chains' controller (hack/versions.sh's
// CHAINS_VERSION, built by `make tools`) as a process against k, with an
// EC P-256 x509 key in Secret tekton-chains/signing-secrets and o.Config
// in chains-config. Chains reads its key only from /etc/signing-secrets;
// the controller gets that folder, filled from the Secret as a kubelet
// would fill a secret volume, in a private mount namespace whose /etc is
// an overlay: the host's /etc is never written. The controller stops when
// t ends.
func StartChains(t testing.TB, k *Kube, o ChainsOptions) *Chains {
	t.Helper()
	c, err := startChains(t, k, o)
	if err != nil {
		t.Fatalf("starting Tekton Chains: %v", err)
	}
	return c
}

func startChains(t testing.TB, k *Kube, o ChainsOptions) (*Chains, error) {
	v, err := Versions()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(CacheDir(), "bin", "chains-"+v["CHAINS_VERSION"], "controller")
	if _, err := os.Stat(bin); err != nil {
		return nil, &ToolError{Tool: "tekton chains controller", Where: filepath.Dir(bin)}
	}
	priv, pub, err := chainsKey()
	if err != nil {
		return nil, err
	}
	verifier, err := signature.LoadVerifier(priv.Public(), crypto.SHA256)
	if err != nil {
		return nil, err
	}
	if err := chainsConfig(k, priv, o.Config); err != nil {
		return nil, err
	}
	dir := t.TempDir()
	upper := filepath.Join(dir, "etc-upper")
	if err := secretVolume(k, ChainsNamespace, "signing-secrets", filepath.Join(upper, filepath.Base(chainsSecretPath))); err != nil {
		return nil, err
	}
	work := filepath.Join(dir, "etc-work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		return nil, err
	}
	p, err := startKnativeController(t, "tekton-chains", func() (*exec.Cmd, error) {
		return chainsCommand(t, k, bin, upper, work)
	})
	if err != nil {
		return nil, err
	}
	return &Chains{PublicKey: pub, Verifier: verifier, proc: p}, nil
}

// chainsCommand wraps the controller in unshare: a private mount
// namespace, /etc overlaid with upper (which holds signing-secrets/), then
// exec, so the controller is the process that startProcess stops.
func chainsCommand(t testing.TB, k *Kube, bin, upper, work string) (*exec.Cmd, error) {
	unshare, err := LookTool("unshare")
	if err != nil {
		return nil, err
	}
	ports, err := knativePortsEnv()
	if err != nil {
		return nil, err
	}
	script := `mount -t overlay kiln-chains-etc -o "lowerdir=/etc,upperdir=$1,workdir=$2" /etc && shift 2 && exec "$@"`
	cmd := exec.Command(unshare, "--mount", "--propagation", "private", "--", "/bin/sh", "-c", script, "sh",
		// No -disable-ha: Chains' main parses flags before sharedmain
		// defines it. It elects itself leader through a Lease.
		upper, work, bin, "-kubeconfig="+k.Kubeconfig(t))
	cmd.Env = append(os.Environ(), "SYSTEM_NAMESPACE="+ChainsNamespace, "METRICS_DOMAIN=tekton.dev/chains",
		"CONFIG_OBSERVABILITY_NAME=tekton-chains-config-observability",
		"CONFIG_LEADERELECTION_NAME=tekton-chains-config-leader-election", "KUBERNETES_MIN_VERSION=v1.28.0")
	cmd.Env = append(cmd.Env, ports...)
	return cmd, nil
}

// chainsKey makes the x509 signing key Chains expects: EC P-256, PKCS#8.
func chainsKey() (*ecdsa.PrivateKey, []byte, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		return nil, nil, err
	}
	return priv, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// chainsConfig creates Chains' namespace, its signing Secret, chains-config
// and the ConfigMaps of its release config (config/config-*.yaml in the
// module).
func chainsConfig(k *Kube, priv *ecdsa.PrivateKey, data map[string]string) error {
	ctx := context.Background()
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return err
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ChainsNamespace}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "signing-secrets", Namespace: ChainsNamespace},
			Data: map[string][]byte{"x509.pem": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "chains-config", Namespace: ChainsNamespace},
			Data: maps.Clone(data)},
	}
	v, err := Versions()
	if err != nil {
		return err
	}
	dir, err := hackModuleDir("chains", "github.com/tektoncd/chains", v["CHAINS_VERSION"])
	if err != nil {
		return err
	}
	cms, err := releaseConfigMaps(dir, ChainsNamespace)
	if err != nil {
		return err
	}
	for _, cm := range cms {
		objs = append(objs, cm)
	}
	for _, o := range objs {
		if err := k.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// secretVolume writes Secret ns/name's keys as files under dir, as the
// kubelet fills a secret volume: read-only files, owner only.
func secretVolume(k *Kube, ns, name, dir string) error {
	s := &corev1.Secret{}
	if err := k.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		return fmt.Errorf("reading Secret %s/%s: %w", ns, name, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for key, val := range s.Data {
		if err := os.WriteFile(filepath.Join(dir, key), val, 0o400); err != nil {
			return fmt.Errorf("writing Secret %s/%s key %s: %w", ns, name, key, err)
		}
	}
	return nil
}
