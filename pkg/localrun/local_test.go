package localrun

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sigstore/cosign/v2/pkg/cosign"

	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/pkg/modsign"
	"github.com/kiln-dev/kiln/pkg/trigger"
	"github.com/kiln-dev/kiln/test/env"
)

// localDir copies a render golden case (two pools, worker and infra) and
// opts both pools in.
func localDir(t *testing.T) string {
	t.Helper()
	src := filepath.Join(env.RepoRoot(), "pkg", "render", "testdata", "golden", "custom-pool-over-worker")
	dir := t.TempDir()
	for _, f := range []string{"machineconfigs.yaml", "payload.yaml", "pools.yaml"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "pools.yaml" {
			b = []byte(strings.ReplaceAll(string(b), "metadata:\n", "metadata:\n  labels:\n    kiln.dev/enabled: \"true\"\n"))
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func asGiven(_ context.Context, ref string) (string, error) { return ref, nil }

// TestPlanLocal: the first run builds every enabled pool; after their
// success is recorded nothing changed; an infra-only MC edit changes infra
// alone, a worker MC edit both (infra selects worker MCs too).
func TestPlanLocal(t *testing.T) {
	dir, out := localDir(t), t.TempDir()
	ctx := context.Background()
	plan := func() map[string]PoolPlan {
		snap, err := mcrender.LoadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		st, err := ReadState(out)
		if err != nil {
			t.Fatal(err)
		}
		ps, err := PlanLocal(ctx, snap, st, "0.1", asGiven)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]PoolPlan{}
		for _, p := range ps {
			m[p.Pool] = p
		}
		return m
	}
	record := func(ps map[string]PoolPlan) {
		st, _ := ReadState(out)
		for _, p := range ps {
			st.Pools[p.Pool] = PoolState{Fingerprint: p.Fingerprint.Sum, Parts: p.Fingerprint.Parts, Run: p.Run}
		}
		if err := st.Write(out); err != nil {
			t.Fatal(err)
		}
	}
	first := plan()
	if len(first) != 2 || !first["worker"].Changed || !first["infra"].Changed || first["infra"].Trigger != trigger.TriggerMachineConfig {
		t.Fatalf("first plan %+v", first)
	}
	record(first)
	for name, p := range plan() {
		if p.Changed {
			t.Fatalf("pool %s changed with no edit", name)
		}
	}
	edit := func(from, to string) {
		b, _ := os.ReadFile(filepath.Join(dir, "machineconfigs.yaml"))
		if !strings.Contains(string(b), from) {
			t.Fatalf("fixture has no %q", from)
		}
		_ = os.WriteFile(filepath.Join(dir, "machineconfigs.yaml"), []byte(strings.Replace(string(b), from, to, 1)), 0o644)
	}
	edit("infra=1", "infra=2")
	if p := plan(); !p["infra"].Changed || p["worker"].Changed || p["infra"].Trigger != trigger.TriggerMachineConfig {
		t.Fatalf("after an infra edit: %+v", p)
	}
	edit("Description=kubelet", "Description=kubelet (edited)")
	if p := plan(); !p["infra"].Changed || !p["worker"].Changed {
		t.Fatalf("after a worker edit: %+v", p)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "payload.yaml"))
	_ = os.WriteFile(filepath.Join(dir, "payload.yaml"), []byte(strings.Replace(string(b), "1111111111", "3333333333", 1)), 0o644)
	record(plan())
	edit("infra=2", "infra=3")
	b, _ = os.ReadFile(filepath.Join(dir, "payload.yaml"))
	_ = os.WriteFile(filepath.Join(dir, "payload.yaml"), []byte(strings.Replace(string(b), "3333333333", "4444444444", 1)), 0o644)
	if p := plan(); p["infra"].Trigger != trigger.TriggerPayload || p["worker"].Trigger != trigger.TriggerPayload {
		t.Fatalf("payload and MC change: payload must win: %+v", p)
	}
}

func TestReadStateCorrupt(t *testing.T) {
	out := t.TempDir()
	_ = os.WriteFile(filepath.Join(out, "state.json"), []byte("{"), 0o644)
	if _, err := ReadState(out); err == nil || !strings.Contains(err.Error(), "delete it to start over") {
		t.Fatalf("corrupt state: %v", err)
	}
}

// TestEnsureLocalKeys: keys are made once, reused, and usable by the
// signers that read them.
func TestEnsureLocalKeys(t *testing.T) {
	dir := t.TempDir()
	k, err := EnsureLocalKeys(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	key1, cert1 := read(filepath.Join(k.Cosign, "cosign.key")), read(filepath.Join(k.KmodCert, "cert"))
	if _, err := cosign.LoadPrivateKey(key1, read(filepath.Join(k.Cosign, "cosign.password")), nil); err != nil {
		t.Fatalf("cosign key: %v", err)
	}
	cert, _, err := modsign.LoadKeyPair(cert1, read(filepath.Join(k.KmodKey, "key")))
	if err != nil {
		t.Fatalf("kmod key pair: %v", err)
	}
	if cert.Subject.CommonName == "" {
		t.Fatal("certificate without a subject")
	}
	if fi, _ := os.Stat(filepath.Join(k.KmodKey, "key")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("private key mode %v", fi.Mode().Perm())
	}
	// The public-key folder, which steps that run user code are given,
	// holds cosign.pub alone, the same as the signing folder's.
	entries, err := os.ReadDir(k.Public)
	if err != nil || len(entries) != 1 || entries[0].Name() != "cosign.pub" ||
		string(read(filepath.Join(k.Public, "cosign.pub"))) != string(read(filepath.Join(k.Cosign, "cosign.pub"))) {
		t.Fatalf("public-key folder %s holds %v (%v), want cosign.pub alone, the signing key's", k.Public, entries, err)
	}
	k2, err := EnsureLocalKeys(dir, "")
	if err != nil || string(read(filepath.Join(k2.Cosign, "cosign.key"))) != string(key1) || string(read(filepath.Join(k2.KmodCert, "cert"))) != string(cert1) {
		t.Fatalf("second call did not reuse the keys (%v)", err)
	}
	if _, err := EnsureLocalKeys(t.TempDir(), filepath.Join(dir, "nope")); err == nil || !strings.Contains(err.Error(), "--key") {
		t.Fatalf("missing --key folder: %v", err)
	}
}
