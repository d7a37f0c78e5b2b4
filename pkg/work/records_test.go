package work

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kiln-dev/kiln/pkg/nodeimport"
	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/test/golden"
)

// TestRecordsKeepTheirWireFormat: every record a stage leaves in the work
// workspace encodes as the golden file says, field for field. The golden
// files hold what the types encoded as before they moved here; a stage of
// one kiln version reads what another wrote (a rerun on the same
// workspace), so a renamed or retagged field fails here.
func TestRecordsKeepTheirWireFormat(t *testing.T) {
	for name, v := range records() {
		t.Run(name, func(t *testing.T) {
			b, err := json.MarshalIndent(v, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "records", name), append(b, '\n'))
		})
	}
	golden.Check(t, filepath.Join("testdata", "records", "drift.txt"), []byte(drift().Text()))
}

// records are one value of every record of the work workspace, each field
// set, keyed by the golden file its JSON is compared with.
func records() map[string]any {
	in := trust.Inputs{BuildType: "https://kiln.dev/build/node-image/v1", Parameters: map[string]string{"format": "kiln-image/3", "pool": "worker"},
		Dependencies: []trust.Dependency{{Name: "base", URI: "oci://q.io/os", Digest: "sha256:b1"}}}
	outcome := Outcome{Name: "ms-a", Reason: "patched", From: "ami-1", To: "ami-2", Template: "t-2"}
	return map[string]any{
		"inputs.json": []Input{{Kind: "MachineConfig", Namespace: "ns", Name: "50-worker", ResourceVersion: "7", SpecHash: "sha256:ab", Role: RoleCurrent}},
		"mco-inputs.json": MCOInputs{
			Pool:     &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"}},
			Defaults: Defaults{OSImageURL: "q.io/os@sha256:01", ExtensionsImage: "q.io/ext@sha256:02", ReleaseVersion: "4.20.0"},
			Configs:  []*mcfgv1.MachineConfig{{ObjectMeta: metav1.ObjectMeta{Name: "00-worker"}}},
		},
		"image-build.json": BuildReport{Record: trust.Record{Ref: "q.io/os@sha256:02", Inputs: in, NodeLint: &trust.NodeLint{Rules: "r1", Pass: true, Warnings: []string{"w"}}},
			Digest: "sha256:02", Reused: true, ReuseRejected: "older format", Fingerprint: "f00", Tag: "kiln-f00", Base: "q.io/base@sha256:03",
			RenderedName: "rendered-worker-1", RenderedHash: "sha256:04", KmodDigests: []string{"sha256:05"}, Pool: "worker", Platforms: []string{"linux/amd64"},
			Entries:          []string{"f 0644 0:0 /etc/x (mc)"},
			NodeLintFindings: []nodeimport.Finding{{Rule: "mco-var", Severity: "warning", Path: "/var/x", Layer: 1}},
			NodeView:         &NodeView{Rendered: 3, AsRendered: 2, NotSeen: []NotSeen{{Path: "/var/x", Rule: "mco-var", Why: "under /var"}}},
		},
		"image-sign.json": SignResult{SignatureRef: "q.io/os@sha256:06", AttestationRef: "q.io/os@sha256:07"},
		"kmod-sign.json": KmodReport{Image: "q.io/kmod@sha256:08", Digest: "sha256:08", Kernel: "5.14.0-1.el9", Signed: []string{"/usr/lib/modules/k/extra/a.ko"},
			Inputs: &in, Reused: true, ReuseRejected: "no attestation",
			Placement: &Placement{Kernel: "5.14.0-1.el9", Modules: []Move{{From: "/opt/lib/modules/k/a.ko", To: "/usr/lib/modules/k/extra/a.ko", Signed: true}},
				Firmware: []Move{{From: "/opt/lib/firmware/f.bin", To: "/usr/lib/firmware/f.bin"}}, Depmod: []string{"/usr/lib/modules/k/modules.dep"}},
		},
		"timeline.json": []Event{{Node: "w0", Phase: "Updated", Status: metav1.ConditionTrue, Reason: "r", Message: "m", Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}},
		"drift.json":    drift(),
		"bootimages-report.json": BootImageReport{Platform: "AWS", ReleaseVersion: "4.20.0", Enrolled: 3, Patched: []Outcome{outcome}, UpToDate: []string{"ms-b"},
			Skipped: []Outcome{{Name: "ms-c", Reason: "owned"}}, Errors: []Outcome{{Name: "ms-d", Reason: "denied"}}, StubsUpgraded: []string{"ns/stub"},
			SkewEnforcement: operatorv1.BootImageSkewEnforcementModeStatusManual,
			Skew:            &Skew{Mode: operatorv1.BootImageSkewEnforcementModeStatusManual, Exceeded: true, Message: "older than 4.13.0"},
			CAPI: &CAPIReport{Enrolled: 1, Patched: []Outcome{outcome}, UpToDate: []string{}, Skipped: []Outcome{}, Errors: []Outcome{},
				TemplatesCreated: []string{"AWSMachineTemplate ns/t-2"}, TemplatesDeleted: []string{"AWSMachineTemplate ns/t-1"}},
		},
	}
}

// drift is a drift diff with every field set.
func drift() *Drift {
	return &Drift{Pool: "worker", Predicted: "rendered-worker-k", Rendered: "rendered-worker-m", Cause: "the rendered specs differ",
		Differences: []Difference{{Path: "spec.kernelArguments", Kind: "kernel argument order", Kiln: `["a"]`, MCO: `["b"]`, SetBy: "50-worker", SetByMCOOnly: []string{"60-late"}}},
		OnlyKiln:    []string{"99-kiln"}, OnlyMCO: []string{"60-late"},
		Annotations: []Difference{{Path: "metadata.annotations[x]", Kind: "field", Kiln: "1", MCO: "2"}}}
}
