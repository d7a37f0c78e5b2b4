package env

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kiln-dev/kiln/pkg/apis"
)

// crdFiles are the CRDs a kiln test cluster has, relative to their module.
// The -Default variants are what a cluster without a feature set serves.
var crdFiles = map[string][]string{
	"github.com/openshift/api": {
		"machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_machineconfigs.crd.yaml",
		"machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_machineconfigpools.crd.yaml",
		"machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_machineconfignodes-Default.crd.yaml",
		"machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_machineosconfigs.crd.yaml",
		"machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_machineosbuilds.crd.yaml",
		"machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_pinnedimagesets.crd.yaml",
		"machine/v1beta1/zz_generated.crd-manifests/0000_10_machine-api_01_machinesets-Default.crd.yaml",
		"machine/v1beta1/zz_generated.crd-manifests/0000_10_machine-api_01_machines-Default.crd.yaml",
		"operator/v1/zz_generated.crd-manifests/0000_80_machine-config_01_machineconfigurations-Default.crd.yaml",
		"config/v1/zz_generated.crd-manifests/0000_00_cluster-version-operator_01_clusterversions-Default.crd.yaml",
		"config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_infrastructures-Default.crd.yaml",
		// The registry layer: mirror sets, image config, cluster proxy.
		"config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_imagedigestmirrorsets.crd.yaml",
		"config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_imagetagmirrorsets.crd.yaml",
		"config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_images-Default.crd.yaml",
		"config/v1/zz_generated.crd-manifests/0000_03_config-operator_01_proxies.crd.yaml",
		"operator/v1alpha1/zz_generated.crd-manifests/0000_10_config-operator_01_imagecontentsourcepolicies.crd.yaml",
	},
	"github.com/tektoncd/pipeline": {
		"config/300-crds/300-task.yaml",
		"config/300-crds/300-taskrun.yaml",
		"config/300-crds/300-pipeline.yaml",
		"config/300-crds/300-pipelinerun.yaml",
		"config/300-crds/300-customrun.yaml",
		"config/300-crds/300-stepaction.yaml",
		"config/300-crds/300-resolutionrequest.yaml",
		"config/300-crds/300-verificationpolicy.yaml",
	},
}

// capiCRDs are the Cluster API CRDs, from modules kiln does not import: the
// key is the module, the value its version's name in hack/versions.sh and
// the files. The bases carry no conversion webhook, so objects are written
// and read at one version each (the storage version of the MachineSet and
// MachineDeployment CRDs is v1beta2, of AWSMachineTemplate v1beta2, of
// GCPMachineTemplate v1beta1).
var capiCRDs = []struct {
	module, versionKey string
	files              []string
}{
	{"sigs.k8s.io/cluster-api", "CAPI_VERSION", []string{
		"config/crd/bases/cluster.x-k8s.io_machinesets.yaml",
		"config/crd/bases/cluster.x-k8s.io_machinedeployments.yaml",
	}},
	{"sigs.k8s.io/cluster-api-provider-gcp", "CAPG_VERSION", []string{
		"config/crd/bases/infrastructure.cluster.x-k8s.io_gcpmachinetemplates.yaml",
	}},
	{"sigs.k8s.io/cluster-api-provider-aws/v2", "CAPA_VERSION", []string{
		"config/crd/bases/infrastructure.cluster.x-k8s.io_awsmachinetemplates.yaml",
	}},
}

// CRDPaths lists every CRD file the test cluster installs: OpenShift's and
// Tekton's from the module cache, Cluster API's from the download-only
// modules pinned in hack/versions.sh, kiln's from config/crd.
func CRDPaths() ([]string, error) {
	var paths []string
	versions, err := Versions()
	if err != nil {
		return nil, err
	}
	for _, m := range capiCRDs {
		v := versions[m.versionKey]
		if v == "" {
			return nil, fmt.Errorf("hack/versions.sh: no %s", m.versionKey)
		}
		dir, err := DownloadedModuleDir(m.module, v)
		if err != nil {
			return nil, err
		}
		for _, f := range m.files {
			paths = append(paths, filepath.Join(dir, f))
		}
	}
	for _, mod := range []string{"github.com/openshift/api", "github.com/tektoncd/pipeline"} {
		dir, err := ModuleDir(mod)
		if err != nil {
			return nil, err
		}
		for _, f := range crdFiles[mod] {
			paths = append(paths, filepath.Join(dir, f))
		}
	}
	all, err := filepath.Glob(filepath.Join(RepoRoot(), "config", "crd", "*.yaml"))
	if err != nil {
		return nil, err
	}
	var ours []string
	for _, p := range all {
		if filepath.Base(p) != "kustomization.yaml" { // config/'s, lists the CRDs
			ours = append(ours, p)
		}
	}
	if len(ours) == 0 {
		return nil, fmt.Errorf("no CRDs in config/crd: run `make generate`")
	}
	return append(paths, ours...), nil
}

// LoadCRDs reads CRD objects from files.
func LoadCRDs(paths []string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("reading CRD: %w", err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		err = yaml.NewYAMLOrJSONDecoder(f, 4096).Decode(crd)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("decoding CRD %s: %w", p, err)
		}
		if crd.Kind != "CustomResourceDefinition" {
			return nil, fmt.Errorf("decoding CRD %s: kind is %q", p, crd.Kind)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// Kube is a real kube-apiserver and etcd with every CRD kiln needs.
type Kube struct {
	Config *rest.Config
	Client client.Client
	Scheme *runtime.Scheme
	env    *envtest.Environment
	// certDir is fixed so that a restarted apiserver keeps its serving
	// certificate and clients keep trusting it.
	certDir string
}

// KubeOptions configure StartKubeWith.
type KubeOptions struct {
	// Address is the IP the apiserver binds; empty means 127.0.0.1. A
	// node's pods need the host's IP (HostIP): envtest's serving
	// certificate names the address, so in-cluster clients verify it.
	// With an Address, ServiceAccount admission is on, as pods need.
	Address string
}

// StartKube starts envtest on the binaries `make tools` built and installs
// the CRDs. It is stopped, and its folders removed, when t ends.
func StartKube(t testing.TB) *Kube {
	t.Helper()
	return StartKubeWith(t, KubeOptions{})
}

// StartKubeWith is StartKube with options.
func StartKubeWith(t testing.TB, o KubeOptions) *Kube {
	t.Helper()
	k, err := startKube(o)
	if err != nil {
		t.Fatalf("starting test cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := k.Stop(); err != nil {
			t.Errorf("stopping test cluster: %v", err)
		}
	})
	return k
}

func startKube(o KubeOptions) (*Kube, error) {
	assets, err := KubeAssets()
	if err != nil {
		return nil, err
	}
	paths, err := CRDPaths()
	if err != nil {
		return nil, err
	}
	crds, err := LoadCRDs(paths)
	if err != nil {
		return nil, err
	}
	scheme, err := apis.NewScheme()
	if err != nil {
		return nil, err
	}
	e := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDs:                  crds,
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
		// envtest's 20 s defaults run out on two busy cores while other
		// packages' clusters and builds run: a node cluster's graceful stop
		// drains many watches, and a start can wait on etcd. envtest copies
		// these onto etcd and the apiserver, overwriting per-process values.
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	certDir, err := os.MkdirTemp("", "kiln-apiserver-")
	if err != nil {
		return nil, err
	}
	api := e.ControlPlane.GetAPIServer()
	api.CertDir = certDir
	if o.Address != "" {
		// envtest replaces an address that comes without a port.
		port, err := freePort(o.Address)
		if err != nil {
			return nil, err
		}
		api.SecureServing.ListenAddr = envtest.ListenAddr{Address: o.Address, Port: strconv.Itoa(port)}
		// A cluster on the host IP is for a node's pods: they need the
		// service account token volume, which envtest's default of no
		// ServiceAccount admission leaves out.
		api.Configure().Disable("disable-admission-plugins")
	}
	cfg, err := e.Start()
	if err != nil {
		_ = e.Stop()
		_ = os.RemoveAll(certDir)
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = e.Stop()
		_ = os.RemoveAll(certDir)
		return nil, err
	}
	return &Kube{Config: cfg, Client: c, Scheme: scheme, env: e, certDir: certDir}, nil
}

// HostPort is the apiserver's address, split for the KUBERNETES_SERVICE_*
// variables of pods on a node without kube-proxy.
func (k *Kube) HostPort() (host, port string) {
	u, err := url.Parse(k.Config.Host)
	if err != nil {
		panic(fmt.Sprintf("test/env: apiserver URL %q: %v", k.Config.Host, err))
	}
	return u.Hostname(), u.Port()
}

// Stop stops the apiserver and etcd (by PID, through envtest) and removes
// their folders.
func (k *Kube) Stop() error {
	err := k.env.Stop()
	return errors.Join(err, os.RemoveAll(k.certDir))
}

// RestartAPIServer kills the kube-apiserver process (SIGKILL: a crash,
// not a graceful stop, which waits on open watches), waits down, and
// starts it again on the same port with the same certificates; etcd keeps
// running, so the cluster's state survives. Tests of controllers use it to
// prove they recover from an apiserver restart.
func (k *Kube) RestartAPIServer(down time.Duration) error {
	s := k.env.ControlPlane.GetAPIServer()
	if err := killByArg("kube-apiserver", "--cert-dir="+k.certDir); err != nil {
		return err
	}
	if err := s.Stop(); err != nil {
		return fmt.Errorf("stopping kube-apiserver: %w", err)
	}
	time.Sleep(down)
	if err := s.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	return nil
}

// Kubeconfig writes a kubeconfig file for this apiserver, the way a user
// hands one to kiln-steps or trigger, and returns its path.
func (k *Kube) Kubeconfig(t testing.TB) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: k.Config.Host, CertificateAuthorityData: k.Config.CAData}
	cfg.AuthInfos["test"] = &clientcmdapi.AuthInfo{ClientCertificateData: k.Config.CertData, ClientKeyData: k.Config.KeyData, Token: k.Config.BearerToken}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	cfg.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// killByArg sends SIGKILL to the process named name whose command line
// holds arg: envtest keeps the process handle to itself.
func killByArg(name, arg string) error {
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		return err
	}
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if filepath.Base(args[0]) != name || !slices.Contains(args, arg) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil {
			return err
		}
		return syscall.Kill(pid, syscall.SIGKILL)
	}
	return fmt.Errorf("no %s process with argument %s", name, arg)
}
