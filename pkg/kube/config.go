package kube

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/kiln-dev/kiln/pkg/apis"
)

// LoadRESTConfig loads a client config the way kubectl and
// controller-runtime do, for the steps and the trigger alike. An explicit
// path is loaded alone (clientcmd's deferred loader with ExplicitPath).
// A context without a path is looked up in $KUBECONFIG or ~/.kube/config
// (clientcmd's default loading rules): asking for a context means a
// kubeconfig, so the in-cluster config, which has none, is not tried.
// With neither it is config.GetConfig's order: $KUBECONFIG, then the
// in-cluster config of the pod's ServiceAccount, then ~/.kube/config. Its
// package-level --kubeconfig flag (registered on the standard flag set)
// is never parsed by kiln, so only the values given here count.
func LoadRESTConfig(kubeconfig, context string) (*rest.Config, error) {
	if kubeconfig == "" && context == "" {
		cfg, err := config.GetConfig()
		if err != nil {
			return nil, fmt.Errorf("loading the cluster config (no --kubeconfig: $KUBECONFIG, in-cluster, ~/.kube/config): %w", err)
		}
		return cfg, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	where := "$KUBECONFIG or ~/.kube/config"
	if kubeconfig != "" {
		rules = &clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}
		where = kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		if context != "" {
			return nil, fmt.Errorf("loading context %q of kubeconfig %s: %w", context, where, err)
		}
		return nil, fmt.Errorf("loading kubeconfig %s: %w", where, err)
	}
	return cfg, nil
}

// connect returns a client of the cluster with kiln's scheme that can
// also watch.
func connect(kubeconfig, context string) (client.WithWatch, error) {
	cfg, err := LoadRESTConfig(kubeconfig, context)
	if err != nil {
		return nil, err
	}
	scheme, err := apis.NewScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	return c, nil
}
