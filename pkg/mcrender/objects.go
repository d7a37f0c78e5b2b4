package mcrender

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/kube"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/work"
)

// Objects are the cluster objects render reads, from a directory of
// manifests or from the API.
type Objects struct {
	Pools           []*mcfgv1.MachineConfigPool
	Configs         []*mcfgv1.MachineConfig
	ConfigMaps      []*corev1.ConfigMap
	ClusterVersions []*configv1.ClusterVersion
	Modules         []*kmmv1beta1.ModuleDay0
}

// LoadDir reads every .yaml, .yml and .json file under dir (recursively;
// several YAML documents per file and v1 Lists are accepted; see
// pkg/manifests) and picks render's objects from them with the code that
// reads the API server, through the folder client of kube.New.
func LoadDir(dir string) (*Objects, error) {
	c, err := kube.New(kube.Source{Folder: &kube.Folder{Dir: dir}})
	if err != nil {
		return nil, err
	}
	return Load(context.Background(), c, true)
}

// LoadCluster reads render's objects from the API server.
func LoadCluster(ctx context.Context, c client.Client) (*Objects, error) {
	return Load(ctx, c, false)
}

// Load reads render's objects from c. A folder is read whole: every
// ConfigMap and ClusterVersion it holds is kept, and Payload and the
// inputs pick theirs, as folder mode always did; from the API server only
// the two objects render reads are fetched, so the step needs no right to
// list ConfigMaps.
func Load(ctx context.Context, c client.Client, folder bool) (*Objects, error) {
	o := &Objects{}
	var pools mcfgv1.MachineConfigPoolList
	var mcs mcfgv1.MachineConfigList
	var mods kmmv1beta1.ModuleDay0List
	for what, l := range map[string]client.ObjectList{"MachineConfigPools": &pools, "MachineConfigs": &mcs, "ModuleDay0s": &mods} {
		if err := c.List(ctx, l); err != nil {
			return nil, fmt.Errorf("listing %s: %w", what, err)
		}
	}
	for i := range pools.Items {
		o.Pools = append(o.Pools, &pools.Items[i])
	}
	for i := range mcs.Items {
		o.Configs = append(o.Configs, &mcs.Items[i])
	}
	for i := range mods.Items {
		o.Modules = append(o.Modules, &mods.Items[i])
	}
	if folder {
		return o, o.listAll(ctx, c)
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: payload.Namespace, Name: payload.OSImageURLMap}, cm); err == nil {
		o.ConfigMaps = append(o.ConfigMaps, cm)
	} else if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", payload.Namespace, payload.OSImageURLMap, err)
	}
	cv := &configv1.ClusterVersion{}
	if err := c.Get(ctx, client.ObjectKey{Name: payload.ClusterVersionName}, cv); err == nil {
		o.ClusterVersions = append(o.ClusterVersions, cv)
	} else if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading ClusterVersion %s: %w", payload.ClusterVersionName, err)
	}
	return o, nil
}

// listAll adds every ConfigMap and ClusterVersion of a folder.
func (o *Objects) listAll(ctx context.Context, c client.Client) error {
	var cms corev1.ConfigMapList
	var cvs configv1.ClusterVersionList
	for what, l := range map[string]client.ObjectList{"ConfigMaps": &cms, "ClusterVersions": &cvs} {
		if err := c.List(ctx, l); err != nil {
			return fmt.Errorf("listing %s: %w", what, err)
		}
	}
	for i := range cms.Items {
		o.ConfigMaps = append(o.ConfigMaps, &cms.Items[i])
	}
	for i := range cvs.Items {
		o.ClusterVersions = append(o.ClusterVersions, &cvs.Items[i])
	}
	return nil
}

// Pool returns the named pool.
func (o *Objects) Pool(name string) (*mcfgv1.MachineConfigPool, error) {
	for _, p := range o.Pools {
		if p.Name == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("MachineConfigPool %q not found", name)
}

// Payload reads the payload facts from the objects.
func (o *Objects) Payload() (payload.Facts, error) {
	var cm *corev1.ConfigMap
	for _, c := range o.ConfigMaps {
		if c.Namespace == payload.Namespace && c.Name == payload.OSImageURLMap {
			cm = c
		}
	}
	var cv *configv1.ClusterVersion
	for _, c := range o.ClusterVersions {
		if c.Name == payload.ClusterVersionName {
			cv = c
		}
	}
	return payload.FromObjects(cm, cv)
}

// Module returns the ModuleDay0 whose machineConfigPoolSelector matches the
// pool's node selector labels, nil if none. KMM allows one per pool; more
// is an error.
func (o *Objects) Module(pool *mcfgv1.MachineConfigPool) (*kmmv1beta1.ModuleDay0, error) {
	var nodeLabels labels.Set
	if ns := pool.Spec.NodeSelector; ns != nil {
		nodeLabels = ns.MatchLabels
	}
	var found []*kmmv1beta1.ModuleDay0
	for _, m := range o.Modules {
		sel := m.Spec.MachineConfigPoolSelector
		if len(sel) > 0 && labels.SelectorFromSet(sel).Matches(nodeLabels) {
			found = append(found, m)
		}
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		// Directory mode has no apiserver to hold the ModuleDay0 to its
		// schema; the same check runs here in both modes.
		if err := found[0].Validate(); err != nil {
			return nil, exitcode.InputRejected(err)
		}
		return found[0], nil
	}
	names := make([]string, len(found))
	for i, m := range found {
		names[i] = m.Namespace + "/" + m.Name
	}
	sort.Strings(names)
	return nil, fmt.Errorf("MachineConfigPool %q: %d ModuleDay0s select it (%s); KMM allows one per pool", pool.Name, len(found), strings.Join(names, ", "))
}

// NewInput records one object as a line of inputs.json.
func NewInput(kind string, meta metav1.Object, spec any) (work.Input, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return work.Input{}, fmt.Errorf("hashing %s %q: %w", kind, meta.GetName(), err)
	}
	sum := sha256.Sum256(b)
	return work.Input{Kind: kind, Namespace: meta.GetNamespace(), Name: meta.GetName(), ResourceVersion: meta.GetResourceVersion(), SpecHash: "sha256:" + hex.EncodeToString(sum[:])}, nil
}
