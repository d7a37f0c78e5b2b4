package buildah

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/imagetest"
)

// TestBudStepsPassesStepLinesOnly: whatever the chunking of buildah's
// output, BudSteps passes each STEP line once, whole, in order, and
// nothing else (RUN output, commit lines, a line that only mentions STEP,
// an overlong line).
func TestBudStepsPassesStepLinesOnly(t *testing.T) {
	out := "STEP 1/3: FROM quay.io/x/dtk@sha256:00\n" +
		"Trying to pull quay.io/x/dtk@sha256:00...\n" +
		"[1/2] STEP 2/3: RUN make -C /usr/src/kmod\r\n" +
		"make: Entering directory '/usr/src/kmod' STEP 9/9: not a step\n" +
		strings.Repeat("x", maxBudLine+10) + "\n" +
		"STEP 3/3: COPY --from=builder /build/kmod.ko /opt/lib/modules/\n" +
		"COMMIT localhost/kiln-bud:1\n" +
		"STEP 4/4: unterminated"
	want := []string{
		"STEP 1/3: FROM quay.io/x/dtk@sha256:00",
		"[1/2] STEP 2/3: RUN make -C /usr/src/kmod",
		"STEP 3/3: COPY --from=builder /build/kmod.ko /opt/lib/modules/",
	}
	for _, size := range []int{1, 7, 100, len(out)} {
		var got []string
		s := &BudSteps{Fn: func(l string) { got = append(got, l) }}
		for b := []byte(out); len(b) > 0; {
			k := min(size, len(b))
			if n, err := s.Write(b[:k]); n != k || err != nil {
				t.Fatalf("Write(%d bytes) = %d, %v", k, n, err)
			}
			b = b[k:]
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("chunks of %d bytes: step lines (-want +got):\n%s", size, diff)
		}
	}
}

// TestBudStreamsStepsWithRealBuildah: a real `buildah bud` of a
// three-instruction Containerfile reports each instruction as it starts,
// in order, and nothing of the RUN steps' output.
func TestBudStreamsStepsWithRealBuildah(t *testing.T) {
	e := env.Start(t, env.Options{Registry: true, Buildah: true})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	base := imagetest.PushBusyboxBase(ctx, t, e, "base/busybox:steps")
	dir := t.TempDir()
	cf := filepath.Join(dir, "Containerfile")
	if err := os.WriteFile(cf, []byte("FROM "+base+"\nRUN echo compiling-quietly\nRUN echo done > /done\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	bud := Bud{Dir: dir, Containerfile: cf, Target: e.Registry.Ref("kiln/steps:1"), Pulls: []string{base},
		OnStep: func(l string) { got = append(got, l) }}
	if _, err := (Buildah{Env: e.Buildah.Env}).BudAndPush(ctx, registry.Remote{Insecure: []string{e.Registry.Host}}, bud); err != nil {
		t.Fatal(err)
	}
	want := []string{"STEP 1/3: FROM " + base, "STEP 2/3: RUN echo compiling-quietly", "STEP 3/3: RUN echo done > /done"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("steps buildah reported (-want +got):\n%s", diff)
	}
}
