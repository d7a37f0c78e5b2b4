package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/release"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "install:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("install", flag.ContinueOnError)
	images := fs.String("images", "_out/release/images.json", "what make images wrote")
	config := fs.String("config", "config", "the kustomization to install")
	out := fs.String("out", "_out/install", "folder of the generated overlay")
	reg := fs.String("registry", "", "refuse images outside this host[:port]/namespace")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config)")
	dryRun := fs.Bool("dry-run", false, "write the overlay only (kubectl apply --server-side -k applies it, without pruning)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	p, err := release.ReadPublished(*images)
	if err != nil {
		return err
	}
	if *dryRun {
		return release.WriteOverlay(*out, *config, p, nil)
	}
	cfg, err := ctrl.GetConfig()
	if *kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", *kubeconfig)
	}
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("connecting to the cluster: %w", err)
	}
	_, err = release.MakeInstall(ctx, release.InstallOptions{Config: *config, OverlayDir: *out, Published: p,
		Registry: *reg, Client: c}, os.Stdout)
	return err
}
