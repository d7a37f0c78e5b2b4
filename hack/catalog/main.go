package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kiln-dev/kiln/pkg/catalog"
	"github.com/kiln-dev/kiln/pkg/registry"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "catalog:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 || (args[0] != "generate" && args[0] != "bundles" && args[0] != "release") {
		if len(args) > 0 {
			return fmt.Errorf("unknown command %q: usage: catalog generate|bundles|release [flags]", args[0])
		}
		return fmt.Errorf("usage: catalog generate|bundles|release [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	root := fs.String("root", ".", "repository root holding tasks/ and pipelines/")
	out := fs.String("out", "", "catalog directory (default <root>/catalog)")
	repo := fs.String("registry", "", "bundles: registry and path, e.g. ghcr.io/kiln-dev/catalog")
	tag := fs.String("tag", "", "release: the steps image tag, v<major>.<minor>.<patch>")
	oci := fs.String("oci", "", "release: OCI layout directory the image is written to")
	base := fs.String("base", "", "release: steps base tarball (default: hack/stepsbase.sh's, in the kiln cache)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if args[0] == "release" {
		if *tag == "" || *oci == "" {
			return fmt.Errorf("release: -tag and -oci are required")
		}
		return release(ctx, *root, *tag, *oci, *base)
	}
	rs, err := catalog.Load(ctx, *root)
	if err != nil {
		return err
	}
	if args[0] == "generate" {
		dir := *out
		if dir == "" {
			dir = filepath.Join(*root, "catalog")
		}
		files, err := catalog.Files(ctx, rs)
		if err != nil {
			return err
		}
		if err := catalog.Write(dir, files); err != nil {
			return err
		}
		fmt.Printf("wrote %d files for %d resources to %s\n", len(files), len(rs), dir)
		return nil
	}
	sel, err := catalog.Select(rs, fs.Args()...)
	if err != nil {
		return err
	}
	// The zero Remote: the Docker config's credentials, as `tkn bundle
	// push` uses.
	pushed, err := catalog.PushBundles(ctx, registry.Remote{}, *repo, sel)
	for _, p := range pushed {
		fmt.Printf("%s %s: %s@%s\n", p.Resource.Kind, p.Resource.Name, p.Ref, p.Digest)
	}
	return err
}
