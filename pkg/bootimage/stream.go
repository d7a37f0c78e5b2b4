package bootimage

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/coreos/stream-metadata-go/stream"
	corev1 "k8s.io/api/core/v1"
)

// Stream is the parsed coreos-bootimages ConfigMap: the CoreOS stream plus
// the facts of the ConfigMap itself that history and guards need.
type Stream struct {
	*stream.Stream
	// Azure holds the marketplace images per architecture. stream-metadata-go
	// v0.4.9 (kiln's pin) predates rhel-coreos-extensions.marketplace, so
	// kiln decodes that one branch of the same document itself, with the
	// field names of the newer stream-metadata-go that MCO vendors.
	Azure map[string]*AzureMarketplace
	// ReleaseVersion is the OCP release the ConfigMap was written for.
	ReleaseVersion string
	// MCOStamp is the MCO release version stamp, "" when not stamped yet.
	MCOStamp string
	// Generation identifies the ConfigMap's content for history entries:
	// metadata.generation, which the apiserver leaves at 0 for ConfigMaps,
	// so in practice the (numeric, etcd) resourceVersion.
	Generation int64
}

// AzureMarketplace lists the marketplace image sets by variant.
type AzureMarketplace struct {
	NoPurchasePlan *AzureImages `json:"no-purchase-plan,omitempty"`
	OCP            *AzureImages `json:"ocp,omitempty"`
	OPP            *AzureImages `json:"opp,omitempty"`
	OKE            *AzureImages `json:"oke,omitempty"`
	OCPEMEA        *AzureImages `json:"ocp-emea,omitempty"`
	OPPEMEA        *AzureImages `json:"opp-emea,omitempty"`
	OKEEMEA        *AzureImages `json:"oke-emea,omitempty"`
}

// AzureImages are the Hyper-V generation 1 and 2 images of one variant.
type AzureImages struct {
	Gen1 *AzureImage `json:"hyperVGen1,omitempty"`
	Gen2 *AzureImage `json:"hyperVGen2,omitempty"`
}

// AzureImage is one marketplace image.
type AzureImage struct {
	Publisher string `json:"publisher"`
	Offer     string `json:"offer"`
	SKU       string `json:"sku"`
	Version   string `json:"version"`
}

// ParseStream decodes the ConfigMap's stream key. Every failure names the
// ConfigMap and the key.
func ParseStream(cm *corev1.ConfigMap) (*Stream, error) {
	where := fmt.Sprintf("ConfigMap %s/%s key %q", cm.Namespace, cm.Name, StreamKey)
	raw, ok := cm.Data[StreamKey]
	if !ok || strings.TrimSpace(raw) == "" {
		return nil, fmt.Errorf("reading %s: missing or empty", where)
	}
	st := &stream.Stream{}
	if err := json.Unmarshal([]byte(raw), st); err != nil {
		return nil, fmt.Errorf("parsing %s as CoreOS stream metadata: %w", where, err)
	}
	if len(st.Architectures) == 0 {
		return nil, fmt.Errorf("parsing %s: no architectures", where)
	}
	var ext struct {
		Architectures map[string]struct {
			Ext *struct {
				Marketplace *struct {
					Azure *AzureMarketplace `json:"azure,omitempty"`
				} `json:"marketplace,omitempty"`
			} `json:"rhel-coreos-extensions,omitempty"`
		} `json:"architectures"`
	}
	if err := json.Unmarshal([]byte(raw), &ext); err != nil {
		return nil, fmt.Errorf("parsing %s marketplace extensions: %w", where, err)
	}
	out := &Stream{Stream: st, Azure: map[string]*AzureMarketplace{},
		ReleaseVersion: cm.Data[ReleaseVersionKey], MCOStamp: cm.Data[MCOReleaseVersionKey], Generation: cm.Generation}
	if out.Generation == 0 {
		out.Generation, _ = strconv.ParseInt(cm.ResourceVersion, 10, 64)
	}
	for arch, a := range ext.Architectures {
		if a.Ext != nil && a.Ext.Marketplace != nil && a.Ext.Marketplace.Azure != nil {
			out.Azure[arch] = a.Ext.Marketplace.Azure
		}
	}
	return out, nil
}

// Arch returns the stream's entry for an RPM architecture name.
func (s *Stream) Arch(arch string) (*stream.Arch, error) {
	a, err := s.GetArchitecture(arch)
	if err != nil {
		return nil, fmt.Errorf("reading boot images for %s: %w", arch, err)
	}
	return a, nil
}
