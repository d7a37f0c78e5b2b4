package trigger

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kiln-dev/kiln/pkg/apis"
	"github.com/kiln-dev/kiln/pkg/kube"
	"github.com/kiln-dev/kiln/pkg/moduleday0"
	"github.com/kiln-dev/kiln/pkg/payload"
)

// Run starts the trigger in cluster mode. Local mode (--source dir:PATH)
// is pkg/localrun's Run, which cmd/ calls instead.
func Run(ctx context.Context, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if o.Source != "cluster" {
		return fmt.Errorf("--source %s: local mode runs through pkg/localrun, not the cluster trigger", o.Source)
	}
	// The logger is the command line's (cmd/cli: --zap-* flags).
	cfg, err := kube.LoadRESTConfig(o.Kubeconfig, o.Context)
	if err != nil {
		return err
	}
	mgr, err := NewManager(cfg, o)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// NewManager builds the controller manager with the trigger's reconcilers
// and the KMM day-0 ModuleDay0 sync. Tests start it in-process against
// test/env.
func NewManager(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	scheme, err := apis.NewScheme()
	if err != nil {
		return nil, err
	}
	managed := labels.SelectorFromSet(labels.Set{LabelRunsManagedBy: ManagedBy})
	// The cache holds only what the trigger reads: the payload's, kiln's
	// and openshift-config's ConfigMaps, kiln's own runs, and the
	// registries' sources and copies (registriesCache).
	byObject := registriesCache(o.Namespace)
	byObject[&corev1.ConfigMap{}] = cache.ByObject{Namespaces: map[string]cache.Config{
		payload.Namespace: {}, o.Namespace: {}, OpenShiftConfigNamespace: {},
	}}
	byObject[&pipelinev1.PipelineRun{}] = cache.ByObject{Namespaces: map[string]cache.Config{o.Namespace: {}}, Label: managed}
	byObject[&pipelinev1.Pipeline{}] = cache.ByObject{Namespaces: map[string]cache.Config{o.Namespace: {}}}
	// Only the PinnedImageSets the trigger made (pins.go): it never reads,
	// and so never changes, anyone else's.
	byObject[&mcfgv1.PinnedImageSet{}] = cache.ByObject{Label: labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedBy})}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:  o.ProbeAddr,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        "kiln-trigger.kiln.dev",
		LeaderElectionNamespace: o.Namespace,
		// Controller names are unique per process for their metrics; a
		// process that builds a new manager after the old one stopped (an
		// in-process restart, as the reliability tests do) reuses them.
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
		Cache:      cache.Options{ByObject: byObject},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the controller manager: %w", err)
	}
	c := &Controller{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Namespace: o.Namespace,
		Recorder: SafeRecorder(mgr.GetEventRecorderFor("kiln-trigger")),
		Settle:   o.Settle, MaxSettle: o.MaxSettle, Insecure: o.Insecure,
	}
	// The trigger's own reads go through the cluster's registries (remote.go).
	c.OSVersion = c.osVersion
	if err := c.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the trigger: %w", err)
	}
	sync := &moduleday0.Sync{
		Client: mgr.GetClient(), Namespace: o.Namespace,
		Recorder: SafeRecorder(mgr.GetEventRecorderFor("kiln-kmm-day0")),
		Exists:   c.kmodImageExists,
	}
	if err := sync.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the ModuleDay0 sync: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("cache", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return errors.New("informer caches are not synced")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return mgr, nil
}
