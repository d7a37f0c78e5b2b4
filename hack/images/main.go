package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/kiln-dev/kiln/hack/catalog/catlint"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/release"
	"github.com/kiln-dev/kiln/pkg/release/build"
	"github.com/kiln-dev/kiln/pkg/sign"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("images", flag.ContinueOnError)
	root := fs.String("root", ".", "the checkout")
	reg := fs.String("registry", "", "where to push: host[:port]/namespace (required)")
	tag := fs.String("tag", "", "the release tag, e.g. v0.1.0 (required)")
	out := fs.String("out", "_out/release", "folder for images.json and images.env")
	base := fs.String("base", "", "steps base tarball (default: hack/stepsbase.sh's, in the kiln cache)")
	authFile := fs.String("authfile", "", "registry auth file (default: $REGISTRY_AUTH_FILE, then podman's and docker's)")
	insecure := fs.String("insecure-registry", "", "comma-separated host[:port] reached over plain HTTP")
	attest := sign.DefaultAttestOptions()
	attest.KeyPath = ""
	fs.StringVar(&attest.KeyPath, "key", "", "cosign private key (its password in $COSIGN_PASSWORD or -password-file)")
	fs.StringVar(&attest.PasswordFile, "password-file", "", "file holding the cosign key's password")
	fs.BoolVar(&attest.Keyless, "keyless", false, "sign with a Fulcio certificate for -identity-token instead of a key")
	fs.StringVar(&attest.FulcioURL, "fulcio-url", attest.FulcioURL, "keyless: Fulcio")
	fs.StringVar(&attest.RekorURL, "rekor-url", attest.RekorURL, "keyless: Rekor (\"\" skips the upload)")
	fs.StringVar(&attest.IDTokenPath, "identity-token", "", "keyless: file holding the OIDC token")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *reg == "" || *tag == "" || (attest.KeyPath == "" && !attest.Keyless) {
		return fmt.Errorf("-registry, -tag and -key (or -keyless) are required")
	}
	if err := attest.Check(); err != nil {
		return err
	}
	platform, err := build.ParsePlatform(catlint.ReleasePlatforms[0])
	if err != nil {
		return err
	}
	if *base == "" {
		if *base, err = catlint.StepsBase(*root); err != nil {
			return err
		}
	}
	r := registry.Remote{AuthFile: *authFile}
	if *insecure != "" {
		r.Insecure = strings.Split(*insecure, ",")
	}
	_, err = release.MakeImages(ctx, release.ImagesOptions{Root: *root, StepsBase: *base, Registry: *reg, Tag: *tag,
		Platform: platform, Remote: r, Sign: attest.Input, OutDir: *out}, os.Stdout)
	return err
}
