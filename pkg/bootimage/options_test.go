package bootimage

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/step"
)

// runStep runs bootimages with its default options changed by set, as
// the command line does (Validate, then Run); a failure is an exitError
// with the code the binary would exit with. cmd/cli tests the flags.
func runStep(t *testing.T, set func(o *Options)) (string, error) {
	t.Helper()
	o := DefaultOptions()
	set(o)
	var out, errb bytes.Buffer
	err := o.Validate()
	if err == nil {
		err = o.Run(context.Background(), step.Streams{Out: &out, Err: &errb})
	}
	if err != nil {
		return out.String(), &exitError{code: exitcode.CodeOf(err), msg: errb.String() + err.Error()}
	}
	return out.String(), nil
}

// local is a directory-mode run on src writing into work.
func local(src, work string) func(o *Options) {
	return func(o *Options) {
		o.Source, o.Work, o.ResultsDir, o.StableTimeout = "dir:"+src, work, filepath.Join(work, "results"), time.Second
	}
}

type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func readResult(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeManifests(t *testing.T, dir string, objs ...any) {
	t.Helper()
	var docs []string
	for _, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestStepLocalMode runs `kiln-steps bootimages --source dir:` on a folder of
// manifests: the patched MachineSet lands in the output folder, the source
// folder is untouched, and the results count patched and skipped.
func TestStepLocalMode(t *testing.T) {
	src, work := t.TempDir(), t.TempDir()
	fleet := localFleet(t, map[string][]byte{UserDataKey: []byte(stubV35)}, nil)
	current := machineSet(t, "ci-worker-us-east-1b", awsSpec("ami-0a1b2c3d4e5f60718", "us-east-1"))
	owned := machineSet(t, "hive-worker", awsSpec("ami-0123456789abcdef0", "us-east-1"))
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "u"}}
	writeManifests(t, src, append(fleet, current, owned)...)
	before, _ := os.ReadFile(filepath.Join(src, "cluster.yaml"))

	out, err := runStep(t, local(src, work))
	if err != nil {
		t.Fatalf("step: %v\n%s", err, out)
	}
	if got := readResult(t, filepath.Join(work, "results"), ResultPatched); got != "1" {
		t.Errorf("%s = %q", ResultPatched, got)
	}
	if got := readResult(t, filepath.Join(work, "results"), ResultSkipped); got != "1" {
		t.Errorf("%s = %q", ResultSkipped, got)
	}
	files, _ := filepath.Glob(filepath.Join(work, "bootimages", "manifests", "machinesets", "*.yaml"))
	if len(files) != 1 || filepath.Base(files[0]) != "openshift-machine-api_ci-worker-us-east-1a.yaml" {
		t.Fatalf("output MachineSets %v", files)
	}
	b, _ := os.ReadFile(files[0])
	got := &machinev1beta1.MachineSet{}
	if err := yaml.UnmarshalStrict(b, got); err != nil {
		t.Fatal(err)
	}
	spec := &machinev1beta1.AWSMachineProviderConfig{}
	if _, err := DecodeProviderSpec(got, spec); err != nil {
		t.Fatal(err)
	}
	if *spec.AMI.ID != "ami-0a1b2c3d4e5f60718" || spec.InstanceType != "m6i.xlarge" || got.Kind != "MachineSet" {
		t.Errorf("output MachineSet: ami %s type %s kind %s", *spec.AMI.ID, spec.InstanceType, got.Kind)
	}
	if after, _ := os.ReadFile(filepath.Join(src, "cluster.yaml")); !bytes.Equal(before, after) {
		t.Error("source folder changed")
	}
	var rep Report
	rb, _ := os.ReadFile(filepath.Join(work, "bootimages", "report.json"))
	if err := json.Unmarshal(rb, &rep); err != nil || len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0].Reason, ReasonOwned) {
		t.Errorf("report %s (%v)", rb, err)
	}
}

// TestStepOnAPIServer runs `kiln-steps bootimages` with a kubeconfig against
// test/env's apiserver and the 20-MachineSet fleet: exactly the stale,
// opted-in, unowned MachineSets are updated.
func TestStepOnAPIServer(t *testing.T) {
	tc := startCluster(t, configv1.GCPPlatformType)
	tc.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "worker-user-data", Namespace: MachineAPINamespace}, Data: map[string][]byte{UserDataKey: []byte(stubV35)}})
	tc.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "legacy-user-data", Namespace: MachineAPINamespace}, Data: map[string][]byte{UserDataKey: []byte(stubV22)}})
	cases := fleet()
	createFleet(t, tc, MachineAPINamespace, cases)
	tc.setOptIn(t, mapi(operatorv1.Partial, &metav1.LabelSelector{MatchLabels: map[string]string{optInLabel: "on"}}))

	work := t.TempDir()
	kubeconfig := filepath.Join(work, "kubeconfig")
	cfg := tc.kube.Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters["env"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["env"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["env"] = &clientcmdapi.Context{Cluster: "env", AuthInfo: "env"}
	kc.CurrentContext = "env"
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	out, err := runStep(t, func(o *Options) {
		o.Kubeconfig, o.Work, o.ResultsDir, o.StableTimeout, o.DefaultArch = kubeconfig, work, filepath.Join(work, "results"), 5*time.Second, "x86_64"
	})
	if err != nil {
		t.Fatalf("step: %v\n%s", err, out)
	}
	var want []string
	for _, c := range cases {
		if c.want == "patched" {
			want = append(want, c.name)
		}
	}
	var rep Report
	rb, _ := os.ReadFile(filepath.Join(work, "bootimages", "report.json"))
	if err := json.Unmarshal(rb, &rep); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range rep.Patched {
		got = append(got, p.Name)
	}
	sort.Strings(want)
	if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("patched (-want +got):\n%s", d)
	}
	if r := readResult(t, filepath.Join(work, "results"), ResultPatched); r != "9" {
		t.Errorf("%s = %q, want 9", ResultPatched, r)
	}
	if r := readResult(t, filepath.Join(work, "results"), ResultSkipped); r != "5" {
		t.Errorf("%s = %q, want 5", ResultSkipped, r)
	}
	if !strings.Contains(out, "[bootimages] MachineSet stale-0: boot image") {
		t.Errorf("progress output:\n%s", out)
	}
	// The legacy stub was converted; none of its content may leak into the
	// step's output, report, results or metrics.
	leaks := []string{"c2VjcmV0LWNh", "api-int.ci.example", "secret-ca"}
	files, _ := filepath.Glob(filepath.Join(work, "*", "*"))
	texts := map[string]string{"stdout": out}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		texts[f] = string(b)
	}
	for name, text := range texts {
		for _, l := range leaks {
			if strings.Contains(text, l) {
				t.Errorf("%s contains user-data (%q)", name, l)
			}
		}
	}
	if len(files) < 4 {
		t.Errorf("scanned only %v", files)
	}
}
