package examples

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/reproduce"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/signing"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/env"
)

// TestSampleImagesReproduce runs `kiln-steps reproduce` as a user would,
// with kiln's public key only, on each pool's image from a from-scratch
// run of the sample, signed by image-sign as the pipeline signs it.
// worker and master (fast path) print one identical line; infra (the
// buildah path on the signed kmod image) prints three, since --deep also
// reproduces the signed kmod image from its own attestation and the
// unsigned one under it, in that order.
func TestSampleImagesReproduce(t *testing.T) {
	addr := freeAddr(t)
	keys := env.CosignKeys(t)
	certFile, keyFile := env.ModuleSigningPair(t, "kiln examples signer")
	runSampleFromScratch(t, addr, keys, certFile, keyFile, func(run sampleRun) {
		ctx := context.WithoutCancel(t.Context())
		reg := registry.RegistryOptions{Insecure: []string{run.host}}
		for pool, want := range map[string][]string{
			"worker": {"worker"}, "master": {"master"}, "infra": {"kmod-build", "kmod-sign", "infra"},
		} {
			ws := work.Workspace{Root: run.works[pool]}
			rep, err := ws.ReadBuildReport()
			if err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			sign := &signing.SignOptions{Options: step.Options{Work: ws.Root, ResultsDir: t.TempDir(), Pool: pool},
				RegistryOptions: reg, Image: rep.Ref, AttestOptions: sign.AttestOptions{RunID: "examples-reproduce",
					SigningOptions: sign.SigningOptions{KeyPath: filepath.Join(keys, "cosign.key")},
					PasswordFile:   filepath.Join(keys, "cosign.password")}}
			if err := sign.Run(ctx, step.Streams{Out: &log, Err: &log}); err != nil {
				t.Fatalf("image-sign %s: %v\n%s", pool, err, log.String())
			}
			o := reproduce.DefaultOptions()
			o.Image, o.PublicKey, o.RegistryOptions, o.BuildahEnv = rep.Ref, filepath.Join(keys, "cosign.pub"), reg, run.buildah.Env
			var out, errb bytes.Buffer
			if err := o.Run(ctx, step.Streams{Out: &out, Err: &errb}); err != nil {
				t.Fatalf("reproduce %s: exit %d: %v\n%s\n%s", rep.Ref, exitcode.CodeOf(err), err, out.String(), errb.String())
			}
			t.Logf("%s:\n%s", pool, out.String())
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) != len(want) || lines[len(lines)-1] != "identical "+rep.Ref {
				t.Fatalf("reproduce %s printed %q, want identical for %v", pool, out.String(), want)
			}
			for i, k := range want {
				if !strings.HasPrefix(lines[i], "identical ") || !strings.HasSuffix(lines[i], "@"+run.digests[k]) {
					t.Errorf("%s line %d %q: want identical …@%s (%s)", pool, i, lines[i], run.digests[k], k)
				}
			}
		}
	})
}
