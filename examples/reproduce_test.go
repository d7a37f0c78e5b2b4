package examples

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kiln-dev/kiln/pkg/osimage"
	"github.com/kiln-dev/kiln/pkg/reproduce"
	"github.com/kiln-dev/kiln/pkg/signing"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/test/env"
)

// TestSampleInfraReproduces runs `kiln-steps reproduce` as a user would,
// with kiln's public key only, on infra's image from a from-scratch run of
// the sample, signed by image-sign as the pipeline signs it: the buildah
// path on the signed kmod image, which (--deep) is reproduced too from
// its own attestation, and the unsigned kmod image under it. Every one is
// identical, in that order.
func TestSampleInfraReproduces(t *testing.T) {
	addr := freeAddr(t)
	keys := env.CosignKeys(t)
	certFile, keyFile := env.ModuleSigningPair(t, "kiln examples signer")
	runSampleFromScratch(t, addr, keys, certFile, keyFile, func(run sampleRun) {
		ctx := context.WithoutCancel(t.Context())
		ws := step.Workspace{Root: run.infraWork}
		rep, err := osimage.ReadReport(osimage.ReportPath(ws.StageDir(step.StageImageBuild)))
		if err != nil {
			t.Fatal(err)
		}
		reg := step.RegistryOptions{Insecure: []string{run.host}}
		var log bytes.Buffer
		sign := &signing.SignOptions{Options: step.Options{Work: run.infraWork, ResultsDir: t.TempDir(), Pool: "infra"},
			RegistryOptions: reg, Image: rep.Ref, AttestOptions: signing.AttestOptions{RunID: "examples-reproduce",
				SigningOptions: step.SigningOptions{KeyPath: filepath.Join(keys, "cosign.key")},
				PasswordFile:   filepath.Join(keys, "cosign.password")}}
		if err := sign.Run(ctx, step.Streams{Out: &log, Err: &log}); err != nil {
			t.Fatalf("image-sign: %v\n%s", err, log.String())
		}
		o := reproduce.DefaultOptions()
		o.Image, o.PublicKey, o.RegistryOptions, o.BuildahEnv = rep.Ref, filepath.Join(keys, "cosign.pub"), reg, run.buildah.Env
		var out, errb bytes.Buffer
		if err := o.Run(ctx, step.Streams{Out: &out, Err: &errb}); err != nil {
			t.Fatalf("reproduce %s: exit %d: %v\n%s\n%s", rep.Ref, step.CodeOf(err), err, out.String(), errb.String())
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		want := []string{"kmod-build", "kmod-sign", "infra"}
		if len(lines) != len(want) || lines[2] != "identical "+rep.Ref {
			t.Fatalf("reproduce printed %q, want identical for %v", out.String(), want)
		}
		for i, k := range want {
			if !strings.HasSuffix(lines[i], "@"+run.digests[k]) || !strings.HasPrefix(lines[i], "identical ") {
				t.Errorf("line %d %q: want identical …@%s (%s)", i, lines[i], run.digests[k], k)
			}
		}
		t.Logf("\n%s", out.String())
	})
}
