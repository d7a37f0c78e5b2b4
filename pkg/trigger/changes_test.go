package trigger

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
)

func mcWithKarg(name, karg string) *mcfgv1.MachineConfig {
	return &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: mcfgv1.MachineConfigSpec{KernelArguments: []string{karg}}}
}

// TestDescribeNamesWhatChanged: the one line the report leads with names
// the MachineConfigs edited, added and removed, the base image by short
// digest, the ModuleDay0 and a rebuild request, decoded from what the
// previous run recorded.
func TestDescribeNamesWhatChanged(t *testing.T) {
	const baseA = "quay.io/ocp/rhcos@sha256:aaaaaaaaaaaa1111111111111111111111111111111111111111111111111111"
	const baseB = "quay.io/ocp/rhcos@sha256:bbbbbbbbbbbb2222222222222222222222222222222222222222222222222222"
	md := &kmmv1beta1.ModuleDay0{ObjectMeta: metav1.ObjectMeta{Name: "kmod-infra", Namespace: "kiln"}}
	prevIn := Inputs{BaseImage: baseA, PipelineVersion: "0.1", MachineConfigs: []*mcfgv1.MachineConfig{
		mcWithKarg("00-worker", "a=1"), mcWithKarg("50-chrony", "b=1"), mcWithKarg("60-old", "c=1"),
	}}
	h := &SpecHasher{}
	prev, err := h.Compute(prevIn)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		edit func(in *Inputs)
		want string
	}{
		{"one MachineConfig edited", func(in *Inputs) {
			in.MachineConfigs = []*mcfgv1.MachineConfig{mcWithKarg("00-worker", "a=1"), mcWithKarg("50-chrony", "b=2"), mcWithKarg("60-old", "c=1")}
		}, "MachineConfig edited 50-chrony"},
		{"added and removed", func(in *Inputs) {
			in.MachineConfigs = []*mcfgv1.MachineConfig{mcWithKarg("00-worker", "a=1"), mcWithKarg("50-chrony", "b=1"), mcWithKarg("70-new", "d=1")}
		}, "MachineConfig added 70-new; MachineConfig removed 60-old"},
		{"many edited are capped", func(in *Inputs) {
			in.MachineConfigs = nil
			for _, n := range []string{"00-worker", "50-chrony", "60-old"} {
				in.MachineConfigs = append(in.MachineConfigs, mcWithKarg(n, "z=9"))
			}
			in.MachineConfigs = append(in.MachineConfigs, mcWithKarg("80-a", "1"), mcWithKarg("81-b", "1"))
		}, "MachineConfigs edited 00-worker, 50-chrony, 60-old; MachineConfigs added 80-a, 81-b"},
		{"base image", func(in *Inputs) { in.BaseImage = baseB },
			"base image sha256:aaaaaaaaaaaa -> sha256:bbbbbbbbbbbb"},
		{"ModuleDay0 added", func(in *Inputs) { in.ModuleDay0 = md }, "ModuleDay0 kiln/kmod-infra added"},
		{"rebuild and pipeline", func(in *Inputs) { in.Rebuild, in.PipelineVersion = "now", "0.2" },
			`rebuild requested (kiln.dev/rebuild="now"); pipeline version 0.1 -> 0.2`},
		{"nothing", func(*Inputs) {}, "same inputs, run again"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := prevIn
			c.edit(&in)
			cur, err := h.Compute(in)
			if err != nil {
				t.Fatal(err)
			}
			recorded := decodeInputs(encodeInputs(prev.Inputs))
			if got := cur.Describe(decodeParts(encodeParts(prev.Parts)), recorded); got != c.want {
				t.Errorf("Describe = %q, want %q", got, c.want)
			}
		})
	}
	if got := prev.Describe(nil, nil); got != "first run for this pool" {
		t.Errorf("first run: %q", got)
	}
	cur, _ := h.Compute(Inputs{BaseImage: baseB, PipelineVersion: "0.1", MachineConfigs: prevIn.MachineConfigs})
	if got := cur.Describe(prev.Parts, nil); got != "payload changed" {
		t.Errorf("a previous run without recorded inputs: %q, want the part's name", got)
	}
}

// TestEncodeInputsDropsNamesPastTheLimit: a pool with more MachineConfigs
// than fit the annotation keeps the images and says MachineConfigs changed
// without names, rather than making a run the apiserver refuses.
func TestEncodeInputsDropsNamesPastTheLimit(t *testing.T) {
	in := Inputs{BaseImage: "b@sha256:1", PipelineVersion: "0.1"}
	for i := range 3000 {
		in.MachineConfigs = append(in.MachineConfigs, mcWithKarg(fmt.Sprintf("%s-%04d", strings.Repeat("x", 20), i), "k=1"))
	}
	h := &SpecHasher{}
	big, err := h.Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	enc := encodeInputs(big.Inputs)
	if len(enc) > maxInputsBytes || strings.Contains(enc, inputMC) || !strings.Contains(enc, `"base":"b@sha256:1"`) || strings.Contains(enc, "\n") {
		t.Fatalf("encoded %d bytes, names kept: %v", len(enc), strings.Contains(enc, inputMC))
	}
	in.MachineConfigs[0] = mcWithKarg(in.MachineConfigs[0].Name, "k=2")
	cur, _ := h.Compute(in)
	if got := cur.Describe(big.Parts, decodeInputs(enc)); got != "MachineConfigs changed (too many to name)" {
		t.Errorf("Describe = %q", got)
	}
}

// TestInputsAnnotationOneLine: the annotation is compact JSON on one line
// (tkn's Annotations block shows one line per key), sorted by key, image
// references unescaped; it decodes back, and the key=value lines older
// releases wrote still decode.
func TestInputsAnnotationOneLine(t *testing.T) {
	in := map[string]string{"mc/99-worker-ssh": "sha256:aa", "base": "quay.io/x/os@sha256:1", "mc/00-worker": "sha256:bb", "rebuild": "<&>"}
	want := `{"base":"quay.io/x/os@sha256:1","mc/00-worker":"sha256:bb","mc/99-worker-ssh":"sha256:aa","rebuild":"<&>"}`
	got := encodeInputs(in)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("encodeInputs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(in, decodeInputs(got)); diff != "" {
		t.Errorf("decodeInputs(encodeInputs) (-want +got):\n%s", diff)
	}
	old := "base=quay.io/x/os@sha256:1\nmc/00-worker=sha256:bb\nmc/99-worker-ssh=sha256:aa\nrebuild=<&>\n"
	if diff := cmp.Diff(in, decodeInputs(old)); diff != "" {
		t.Errorf("decodeInputs of an older release's lines (-want +got):\n%s", diff)
	}
	if got := decodeInputs("{not json"); got != nil {
		t.Errorf("decodeInputs of broken JSON = %v, want none", got)
	}
}

// FuzzDecodeInputs: any annotation value decodes without panicking, and
// what an encode makes decodes back.
func FuzzDecodeInputs(f *testing.F) {
	f.Add("base=b@sha256:1\nmc/00-worker=abc\n")
	f.Add("")
	f.Add("=\n=\n")
	f.Fuzz(func(t *testing.T, s string) {
		m := decodeInputs(s)
		for k := range m {
			if strings.Contains(k, "\n") {
				t.Fatalf("key %q spans lines", k)
			}
		}
		if enc := encodeInputs(map[string]string{"k": s}); strings.Contains(enc, "\n") {
			t.Fatalf("encoding %q spans lines: %q", s, enc)
		}
		if !utf8.ValidString(s) {
			return // JSON holds text; inputs are names, hashes and references
		}
		if back := decodeInputs(encodeInputs(map[string]string{"k": s})); back["k"] != s {
			t.Fatalf("round trip of %q gave %q", s, back["k"])
		}
	})
}
