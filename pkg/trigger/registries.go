package trigger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kiln-dev/kiln/pkg/registry"
)

// In cluster mode every run reaches registries the way the cluster's
// nodes do: with the cluster pull secret, the mirror sets (IDMS, ITMS,
// ICSP), the image config's insecure registries and trusted CAs, and the
// cluster proxy. A run's pods cannot mount openshift-config's objects, so
// the trigger keeps two copies in its own namespace and binds them:
//
//   - Secret kiln-pull-secret (kubernetes.io/dockerconfigjson), the
//     openshift-config/pull-secret's auths, as workspace registry-auth
//     (mounted as config.json, the file the Tasks read);
//   - ConfigMap kiln-registries, the registries folder that
//     registry.FromCluster and Config.WriteDir make, as workspace
//     registries (its items put each file at its path).
//
// Both are kept current by the kiln-registries controller, whatever runs
// do; a run is made only after they were brought up to date. They are not
// fingerprint inputs (see ClusterRun).
const (
	// OpenShiftConfigNamespace holds the cluster pull secret and the
	// image config's trusted CA ConfigMap.
	OpenShiftConfigNamespace = "openshift-config"
	PullSecretName           = "pull-secret"
	// PullSecretCopy and RegistriesConfigMap are the trigger's copies in
	// its namespace.
	PullSecretCopy      = "kiln-pull-secret"
	RegistriesConfigMap = "kiln-registries"
	// The workspaces the trigger binds, when the Pipeline declares them
	// and kiln-config binds no workspace of that name.
	WorkspaceRegistries   = "registries"
	WorkspaceRegistryAuth = "registry-auth"
	// registryAuthFile is where the Tasks read the auth file in the
	// registry-auth workspace.
	registryAuthFile = "config.json"
	// AnnotCopiedFrom on a copy names its source.
	AnnotCopiedFrom = "kiln.dev/copied-from"

	// ReasonRegistries: the cluster's registry objects make no valid
	// registries config; runs wait for them to be fixed.
	ReasonRegistries = "InvalidRegistries"
)

// registriesRetry is how often a pool whose run waits for the registries
// tries again, since their fix enqueues no pool (they are not inputs):
// every --max-settle, the longest the trigger otherwise waits to act.
func (c *Controller) registriesRetry() time.Duration {
	if c.MaxSettle > 0 {
		return c.MaxSettle
	}
	return 30 * time.Second
}

var registriesKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "\x00registries"}}

// registriesCache limits the manager's cache to what the registries code
// reads, by name where the name is fixed. RBAC can name objects only for
// get, and for list and watch when the request selects metadata.name;
// the cache's field selectors are what let config/rbac grant Secret reads
// for openshift-config/pull-secret and kiln-pull-secret alone, and the
// Image and Proxy reads for "cluster" alone. ConfigMaps are added to the
// namespaces of the existing ConfigMap entry by the caller: the trusted
// CA ConfigMap's name is the admin's choice.
func registriesCache(namespace string) map[client.Object]cache.ByObject {
	byName := func(name string) fields.Selector { return fields.OneTermEqualSelector("metadata.name", name) }
	return map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Namespaces: map[string]cache.Config{
			OpenShiftConfigNamespace: {FieldSelector: byName(PullSecretName)},
			namespace:                {FieldSelector: byName(PullSecretCopy)},
		}},
		&configv1.Image{}: {Field: byName(clusterConfigName)},
		&configv1.Proxy{}: {Field: byName(clusterConfigName)},
	}
}

// setupRegistries registers the kiln-registries controller: it keeps the
// copies current when their sources change, so a running run's next Task
// sees a rotated pull secret too. It enqueues no pool: a registry change
// is not an input.
func (c *Controller) setupRegistries(mgr ctrl.Manager) error {
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{registriesKey}
	})
	// openshift-config's ConfigMaps all count: which one holds the CAs is
	// the image config's to say, and it may change with it.
	sources := builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
		switch o.GetNamespace() {
		case OpenShiftConfigNamespace:
			return true
		case c.Namespace:
			return o.GetName() == RegistriesConfigMap || o.GetName() == PullSecretCopy
		}
		return false
	}))
	return ctrl.NewControllerManagedBy(mgr).Named("kiln-registries").
		Watches(&corev1.Secret{}, one, sources).
		Watches(&corev1.ConfigMap{}, one, sources).
		Watches(&configv1.ImageDigestMirrorSet{}, one).
		Watches(&configv1.ImageTagMirrorSet{}, one).
		Watches(&operatorv1alpha1.ImageContentSourcePolicy{}, one).
		Watches(&configv1.Image{}, one).
		Complete(reconcile.Func(c.reconcileRegistries))
}

func (c *Controller) reconcileRegistries(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	_, err := c.syncRegistries(ctx)
	var e *Error
	if errors.As(err, &e) {
		// Bad objects wait for a change of one of them (all are watched);
		// the pool event of the next run says it too.
		log.FromContext(ctx).Info("registries of the runs not updated", "reason", e.Reason, "error", e.Err.Error())
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, err
}

// clusterRun brings the copies up to date and returns what a run of
// Pipeline p gets from the cluster: a binding for each of the registries
// and registry-auth workspaces that p declares (registry-auth only when
// the cluster has a pull secret), and the proxy env.
func (c *Controller) clusterRun(ctx context.Context, p *pipelinev1.Pipeline) (ClusterRun, error) {
	st, err := c.syncRegistries(ctx)
	if err != nil {
		return ClusterRun{}, err
	}
	declared := map[string]bool{}
	for _, w := range p.Spec.Workspaces {
		declared[w.Name] = true
	}
	// Optional: a key (or the Secret) gone by the time a later Task's pod
	// starts is left out rather than keeping the pod from starting.
	var r ClusterRun
	if declared[WorkspaceRegistries] {
		r.Workspaces = append(r.Workspaces, pipelinev1.WorkspaceBinding{Name: WorkspaceRegistries, ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: RegistriesConfigMap}, Items: st.items, Optional: ptr.To(true),
		}})
	}
	if declared[WorkspaceRegistryAuth] && st.pullSecret {
		r.Workspaces = append(r.Workspaces, pipelinev1.WorkspaceBinding{Name: WorkspaceRegistryAuth, Secret: &corev1.SecretVolumeSource{
			SecretName: PullSecretCopy, Items: []corev1.KeyToPath{{Key: corev1.DockerConfigJsonKey, Path: registryAuthFile}}, Optional: ptr.To(true),
		}})
	}
	var proxy configv1.Proxy
	err = c.Client.Get(ctx, client.ObjectKey{Name: clusterConfigName}, &proxy)
	switch {
	case err == nil:
		r.Env = proxyEnv(&proxy)
	case !apierrors.IsNotFound(err):
		return ClusterRun{}, fmt.Errorf("reading proxy.config.openshift.io/%s: %w", clusterConfigName, err)
	}
	return r, nil
}

// registriesState is what the copies hold now.
type registriesState struct {
	items      []corev1.KeyToPath
	pullSecret bool
}

// syncRegistries writes the copies from their sources. The pool and
// registries controllers both call it; the lock keeps them from racing
// on the same writes.
func (c *Controller) syncRegistries(ctx context.Context) (registriesState, error) {
	c.registriesMu.Lock()
	defer c.registriesMu.Unlock()
	var st registriesState
	var err error
	if st.pullSecret, err = c.syncPullSecret(ctx); err != nil {
		return st, err
	}
	in, err := c.clusterInputs(ctx)
	if err != nil {
		return st, err
	}
	cfg, err := registry.FromCluster(in)
	if err != nil {
		return st, fail(ReasonRegistries, fmt.Errorf("making the registries config from the mirror sets and image.config.openshift.io/%s: %w", clusterConfigName, err))
	}
	fd, err := configMapFromConfig(cfg)
	if err != nil {
		return st, fail(ReasonRegistries, err)
	}
	if err := c.syncRegistriesConfigMap(ctx, fd); err != nil {
		return st, err
	}
	st.items = fd.Items
	return st, nil
}

// clusterInputs reads the objects registry.FromCluster takes, sorted by
// name: the cache lists in no particular order, and the same objects must
// make the same ConfigMap.
func (c *Controller) clusterInputs(ctx context.Context) (registry.ClusterInputs, error) {
	in := registry.ClusterInputs{Insecure: c.Insecure}
	var idms configv1.ImageDigestMirrorSetList
	if err := c.Client.List(ctx, &idms); err != nil {
		return in, fmt.Errorf("listing ImageDigestMirrorSets: %w", err)
	}
	sort.Slice(idms.Items, func(i, j int) bool { return idms.Items[i].Name < idms.Items[j].Name })
	var itms configv1.ImageTagMirrorSetList
	if err := c.Client.List(ctx, &itms); err != nil {
		return in, fmt.Errorf("listing ImageTagMirrorSets: %w", err)
	}
	sort.Slice(itms.Items, func(i, j int) bool { return itms.Items[i].Name < itms.Items[j].Name })
	var icsp operatorv1alpha1.ImageContentSourcePolicyList
	if err := c.Client.List(ctx, &icsp); err != nil {
		return in, fmt.Errorf("listing ImageContentSourcePolicies: %w", err)
	}
	sort.Slice(icsp.Items, func(i, j int) bool { return icsp.Items[i].Name < icsp.Items[j].Name })
	in.IDMS, in.ITMS, in.ICSP = idms.Items, itms.Items, icsp.Items

	var img configv1.Image
	err := c.Client.Get(ctx, client.ObjectKey{Name: clusterConfigName}, &img)
	if apierrors.IsNotFound(err) {
		return in, nil
	}
	if err != nil {
		return in, fmt.Errorf("reading image.config.openshift.io/%s: %w", clusterConfigName, err)
	}
	in.Image = &img
	name := img.Spec.AdditionalTrustedCA.Name
	if name == "" {
		return in, nil
	}
	var ca corev1.ConfigMap
	err = c.Client.Get(ctx, client.ObjectKey{Namespace: OpenShiftConfigNamespace, Name: name}, &ca)
	if apierrors.IsNotFound(err) {
		return in, fail(ReasonRegistries, fmt.Errorf("image.config.openshift.io/%s: spec.additionalTrustedCA.name %q: ConfigMap %s/%s not found", clusterConfigName, name, OpenShiftConfigNamespace, name))
	}
	if err != nil {
		return in, fmt.Errorf("reading ConfigMap %s/%s (image.config.openshift.io/%s spec.additionalTrustedCA): %w", OpenShiftConfigNamespace, name, clusterConfigName, err)
	}
	in.TrustedCA = &ca
	return in, nil
}

// syncPullSecret copies openshift-config/pull-secret's auths and reports
// whether there is a copy. Without the source, the copy is deleted: kiln
// keeps no credentials the cluster withdrew. Nothing here logs or wraps
// the Secret's content.
func (c *Controller) syncPullSecret(ctx context.Context) (bool, error) {
	var src corev1.Secret
	err := c.Client.Get(ctx, client.ObjectKey{Namespace: OpenShiftConfigNamespace, Name: PullSecretName}, &src)
	if apierrors.IsNotFound(err) {
		return false, c.deletePullSecretCopy(ctx)
	}
	if err != nil {
		return false, fmt.Errorf("reading Secret %s/%s: %w", OpenShiftConfigNamespace, PullSecretName, err)
	}
	auth := src.Data[corev1.DockerConfigJsonKey]
	if len(auth) == 0 {
		return false, fail(ReasonRegistries, fmt.Errorf("Secret %s/%s: data[%s] is missing or empty: the cluster pull secret is a %s Secret",
			OpenShiftConfigNamespace, PullSecretName, corev1.DockerConfigJsonKey, corev1.SecretTypeDockerConfigJson))
	}
	var cur corev1.Secret
	err = c.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: PullSecretCopy}, &cur)
	if apierrors.IsNotFound(err) {
		cp := &corev1.Secret{
			ObjectMeta: c.copyMeta(PullSecretCopy, OpenShiftConfigNamespace+"/"+PullSecretName),
			Type:       corev1.SecretTypeDockerConfigJson,
			Data:       map[string][]byte{corev1.DockerConfigJsonKey: auth},
		}
		if err := c.Client.Create(ctx, cp); err != nil {
			return false, fmt.Errorf("creating Secret %s/%s: %w", c.Namespace, PullSecretCopy, err)
		}
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading Secret %s/%s: %w", c.Namespace, PullSecretCopy, err)
	}
	if err := notOurs("Secret", &cur); err != nil {
		return false, err
	}
	if len(cur.Data) == 1 && bytes.Equal(cur.Data[corev1.DockerConfigJsonKey], auth) {
		return true, nil
	}
	cur.Data = map[string][]byte{corev1.DockerConfigJsonKey: auth}
	if err := c.Client.Update(ctx, &cur); err != nil {
		return false, fmt.Errorf("updating Secret %s/%s: %w", c.Namespace, PullSecretCopy, err)
	}
	return true, nil
}

func (c *Controller) deletePullSecretCopy(ctx context.Context) error {
	var cur corev1.Secret
	err := c.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: PullSecretCopy}, &cur)
	if apierrors.IsNotFound(err) || (err == nil && notOurs("Secret", &cur) != nil) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Secret %s/%s: %w", c.Namespace, PullSecretCopy, err)
	}
	if err := c.Client.Delete(ctx, &cur, client.Preconditions{UID: &cur.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Secret %s/%s, the copy of the gone %s/%s: %w", c.Namespace, PullSecretCopy, OpenShiftConfigNamespace, PullSecretName, err)
	}
	return nil
}

func (c *Controller) syncRegistriesConfigMap(ctx context.Context, fd folderData) error {
	var cur corev1.ConfigMap
	err := c.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: RegistriesConfigMap}, &cur)
	if apierrors.IsNotFound(err) {
		cm := &corev1.ConfigMap{ObjectMeta: c.copyMeta(RegistriesConfigMap, ""), Data: fd.Data, BinaryData: fd.Binary}
		if err := c.Client.Create(ctx, cm); err != nil {
			return fmt.Errorf("creating ConfigMap %s/%s: %w", c.Namespace, RegistriesConfigMap, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading ConfigMap %s/%s: %w", c.Namespace, RegistriesConfigMap, err)
	}
	if err := notOurs("ConfigMap", &cur); err != nil {
		return err
	}
	if maps.Equal(cur.Data, fd.Data) && maps.EqualFunc(cur.BinaryData, fd.Binary, bytes.Equal) {
		return nil
	}
	cur.Data, cur.BinaryData = fd.Data, fd.Binary
	if err := c.Client.Update(ctx, &cur); err != nil {
		return fmt.Errorf("updating ConfigMap %s/%s: %w", c.Namespace, RegistriesConfigMap, err)
	}
	return nil
}

func (c *Controller) copyMeta(name, from string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: map[string]string{LabelManagedBy: ManagedBy}}
	if from != "" {
		m.Annotations = map[string]string{AnnotCopiedFrom: from}
	}
	return m
}

// notOurs refuses to overwrite an object of the copies' names that the
// trigger did not make.
func notOurs(kind string, o client.Object) error {
	if o.GetLabels()[LabelManagedBy] == ManagedBy {
		return nil
	}
	return fail(ReasonRegistries, fmt.Errorf("%s %s/%s exists without the label %s=%s: the trigger keeps its registries copy there and does not overwrite another's; delete or rename it",
		kind, o.GetNamespace(), o.GetName(), LabelManagedBy, ManagedBy))
}
