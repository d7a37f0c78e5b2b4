package imagetest

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"testing"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/vincent-petithory/dataurl"
	"k8s.io/apimachinery/pkg/runtime"
)

// Ptr returns a pointer to v, for Ignition's optional fields.
func Ptr[T any](v T) *T { return &v }

// DataURL encodes content as Ignition does: a base64 data: URL, gzipped
// first when gz is set.
func DataURL(t testing.TB, content string, gz bool) igntypes.Resource {
	t.Helper()
	b := []byte(content)
	var comp *string
	if gz {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(b)
		zw.Close()
		b = buf.Bytes()
		comp = Ptr("gzip")
	}
	return igntypes.Resource{Source: Ptr(dataurl.EncodeBytes(b)), Compression: comp}
}

// File is an Ignition file of content at path with mode.
func File(t testing.TB, path, content string, mode int, gz bool) igntypes.File {
	return igntypes.File{
		Node:          igntypes.Node{Path: path},
		FileEmbedded1: igntypes.FileEmbedded1{Contents: DataURL(t, content, gz), Mode: Ptr(mode)},
	}
}

// RenderedMC builds a rendered MachineConfig as the render stage writes it.
func RenderedMC(t testing.TB, name string, cfg igntypes.Config) *mcfgv1.MachineConfig {
	t.Helper()
	cfg.Ignition.Version = "3.5.0"
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mc := &mcfgv1.MachineConfig{Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: raw}, KernelType: "default"}}
	mc.APIVersion = mcfgv1.GroupVersion.String()
	mc.Kind = "MachineConfig"
	mc.Name = name
	mc.Annotations = map[string]string{"machineconfiguration.openshift.io/generated-by-controller-version": "kiln"}
	return mc
}

// KubeletUnit is the sample kubelet unit of SampleConfig.
const KubeletUnit = `[Unit]
Description=test kubelet
[Service]
ExecStart=/usr/bin/true
[Install]
WantedBy=multi-user.target
RequiredBy=network-online.target
Alias=kl.service
`

// SampleConfig has a bit of everything the fast path handles.
func SampleConfig(t testing.TB, motd string) igntypes.Config {
	return igntypes.Config{
		Storage: igntypes.Storage{
			Files: []igntypes.File{
				File(t, "/etc/motd", motd, 0o644, false),
				File(t, "/etc/kubernetes/kubelet.conf", "kind: KubeletConfiguration\n", 0o600, true),
				{Node: igntypes.Node{Path: "/usr/local/bin/tool", User: igntypes.NodeUser{ID: Ptr(1000)}, Group: igntypes.NodeGroup{ID: Ptr(1001)}},
					FileEmbedded1: igntypes.FileEmbedded1{Contents: DataURL(t, "#!/bin/sh\necho hi\n", false), Mode: Ptr(0o755)}},
			},
		},
		Systemd: igntypes.Systemd{Units: []igntypes.Unit{
			{Name: "kubelet.service", Enabled: Ptr(true), Contents: Ptr(KubeletUnit),
				Dropins: []igntypes.Dropin{{Name: "10-env.conf", Contents: Ptr("[Service]\nEnvironment=A=1\n")}}},
			{Name: "getty@.service", Enabled: Ptr(true), Contents: Ptr("[Install]\nWantedBy=getty.target\nDefaultInstance=tty1\n")},
			{Name: "bad.service", Mask: Ptr(true)},
		}},
	}
}
