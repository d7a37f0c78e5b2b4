package mcrender

import (
	"fmt"
	"strings"
	"testing"

	"github.com/clarketm/json"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

const (
	sizeUID  = "5d3c1a8e-7f42-4b9e-a1c3-9e8f7d6c5b4a"
	sizeHash = "0f3e2d1c4b5a69788796a5b4c3d2e1f00f1e2d3c"
)

var sizeDefaults = Defaults{OSImageURL: "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + strings.Repeat("1", 64),
	ExtensionsImage: "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + strings.Repeat("2", 64), ReleaseVersion: "4.20.0"}

// paddedSpec is a merged spec whose config holds one file of n bytes of pad.
func paddedSpec(pad string, n int) mcfgv1.MachineConfigSpec {
	raw := fmt.Sprintf(`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/pad","contents":{"source":"data:,%s"},"mode":420,"overwrite":true}]}}`, strings.Repeat(pad, n))
	return mcfgv1.MachineConfigSpec{OSImageURL: sizeDefaults.OSImageURL, BaseOSExtensionsContainerImage: sizeDefaults.ExtensionsImage,
		Config: runtime.RawExtension{Raw: []byte(raw)}, KernelArguments: []string{}, Extensions: []string{}, KernelType: "default"}
}

// mcoBytes is, written out by hand, the object MCO's render controller
// measures (pkg/controller/render/render_controller.go
// generateRenderedMachineConfig, then pkg/controller/common/helpers.go
// ValidateMachineConfigSize): no apiVersion/kind, no labels, the name, the
// two annotations MCO sets (plus the override one when the OS image is
// overridden), the pool as controller owner, and the spec — all through
// github.com/clarketm/json, which escapes <, > and & as \u003c….
func mcoBytes(t *testing.T, name, hash, uid string, overridden bool, spec mcfgv1.MachineConfigSpec) int {
	t.Helper()
	specJSON, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	over := ""
	if overridden {
		over = `,"machineconfiguration.openshift.io/os-image-url-overridden":"true"`
	}
	doc := `{"metadata":{"name":"` + name + `","annotations":{` +
		`"machineconfiguration.openshift.io/generated-by-controller-version":"` + hash + `"` + over + `,` +
		`"machineconfiguration.openshift.io/release-image-version":"4.20.0"},` +
		`"ownerReferences":[{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfigPool","name":"worker","uid":"` + uid + `","controller":true,"blockOwnerDeletion":true}]},` +
		`"spec":` + string(specJSON) + `}`
	return len(doc)
}

// TestSizeLimitMeasuredAsMCO: a rendered config a few bytes either side of
// MaxConfigSize, measured on exactly MCO's bytes, gets MCO's answer (over
// the limit fails; at the limit passes), and the error gives MCO's count.
func TestSizeLimitMeasuredAsMCO(t *testing.T) {
	generated := &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "00-worker",
		Annotations: map[string]string{GeneratedByAnnotation: sizeHash}}}
	user := &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "99-worker-" + strings.Repeat("long-name-", 20)}}
	withUID := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker", UID: types.UID(sizeUID)}}
	noUID := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"}}
	cases := []struct {
		name   string
		pool   *mcfgv1.MachineConfigPool
		inputs []*mcfgv1.MachineConfig
		pad    string
		// hash and uid are what MCO's object would carry.
		hash, uid  string
		overridden bool
	}{
		{name: "cluster pool, controller version from the generated MCs", pool: withUID,
			inputs: []*mcfgv1.MachineConfig{generated, user}, pad: "A", hash: sizeHash, uid: sizeUID},
		{name: "characters JSON escapes count as MCO's encoder writes them", pool: withUID,
			inputs: []*mcfgv1.MachineConfig{generated, user}, pad: "<", hash: sizeHash, uid: sizeUID},
		{name: "OS image overridden", pool: withUID, overridden: true,
			inputs: []*mcfgv1.MachineConfig{generated, user}, pad: "A", hash: sizeHash, uid: sizeUID},
		{name: "manifests: pool without UID and no generated MCs measure MCO's lengths", pool: noUID,
			inputs: []*mcfgv1.MachineConfig{user}, pad: "A", hash: strings.Repeat("0", 40), uid: strings.Repeat("0", 36)},
	}
	for _, c := range cases {
		for _, delta := range []int{-3, -2, -1, 0, 1, 2, 3} {
			t.Run(fmt.Sprintf("%s/limit%+d", c.name, delta), func(t *testing.T) {
				s := specOfSize(t, MaxConfigSize+delta, c.pad, c.overridden, func(s mcfgv1.MachineConfigSpec) int {
					return mcoBytes(t, sizeName, c.hash, c.uid, c.overridden, s)
				})
				err := checkSize(c.pool, c.inputs, sizeName, s, sizeDefaults)
				// The boundary goes through the whole assembly, which names
				// the config itself (a name of the same length).
				if c.name == cases[0].name && (delta == 0 || delta == 1) {
					_, err = assemble(c.pool, c.inputs, s, sizeDefaults)
				}
				want := MaxConfigSize + delta
				if delta <= 0 {
					if err != nil {
						t.Fatalf("%d bytes (limit %d) refused: %v", want, MaxConfigSize, err)
					}
					return
				}
				if err == nil {
					t.Fatalf("%d bytes (limit %d) accepted", want, MaxConfigSize)
				}
				if msg := fmt.Sprintf("is too large: %d bytes, limit %d", want, MaxConfigSize); !strings.Contains(err.Error(), msg) {
					t.Errorf("error %q does not give MCO's count (%q)", err, msg)
				}
			})
		}
	}
}

// sizeName has the length of every rendered-worker-<md5> name.
var sizeName = "rendered-worker-" + strings.Repeat("f", 32)

// specOfSize returns a padded spec that measure sizes at exactly want
// bytes: pad characters (which may cost several bytes each once escaped),
// topped up with plain ones.
func specOfSize(t *testing.T, want int, pad string, overridden bool, measure func(mcfgv1.MachineConfigSpec) int) mcfgv1.MachineConfigSpec {
	t.Helper()
	spec := func(n int) mcfgv1.MachineConfigSpec {
		s := paddedSpec(pad, n)
		if overridden {
			s.OSImageURL = "quay.io/acme/os@sha256:" + strings.Repeat("9", 64)
		}
		return s
	}
	base := measure(spec(0))
	n := (want - base) / (measure(spec(1)) - base)
	s := spec(n)
	extra := want - measure(s)
	s.Config.Raw = []byte(strings.Replace(string(s.Config.Raw), "data:,", "data:,"+strings.Repeat("A", extra), 1))
	if got := measure(s); got != want {
		t.Fatalf("fixture measures %d bytes, want %d", got, want)
	}
	return s
}

// TestSizeCountsEscapesAsMCO states the encoding fact the limit rests on:
// MCO's encoder writes '<' as \u003c, six bytes, so ten of them cost fifty
// bytes more than ten plain characters.
func TestSizeCountsEscapesAsMCO(t *testing.T) {
	pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker", UID: types.UID(sizeUID)}}
	plain, err := mcoSize(pool, nil, "rendered-worker-x", paddedSpec("A", 10), sizeDefaults)
	if err != nil {
		t.Fatal(err)
	}
	escaped, err := mcoSize(pool, nil, "rendered-worker-x", paddedSpec("<", 10), sizeDefaults)
	if err != nil {
		t.Fatal(err)
	}
	if escaped-plain != 50 {
		t.Fatalf("ten '<' cost %d bytes more than ten 'A', want 50", escaped-plain)
	}
}
