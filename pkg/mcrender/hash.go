package mcrender

import (
	"crypto/md5" //nolint:gosec // MCO's rendered names use MD5; we must match them
	"encoding/hex"
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"sigs.k8s.io/yaml"
)

// salt is the fixed 80-byte prefix MCO hashes before the spec
// (pkg/controller/render/hash.go); a fact, copied so names match MCO's.
var salt = []byte{
	16, 124, 206, 228, 139, 56, 175, 175, 79, 229, 134, 118, 157, 154, 211, 110,
	25, 93, 47, 253, 172, 106, 37, 7, 174, 13, 160, 185, 110, 17, 87, 52,
	219, 131, 12, 206, 218, 141, 116, 135, 188, 181, 192, 151, 233, 62, 126, 165,
	64, 83, 179, 119, 15, 168, 208, 197, 146, 107, 58, 227, 133, 188, 238, 26,
	33, 26, 235, 202, 32, 173, 31, 234, 41, 144, 148, 79, 6, 206, 23, 22,
}

// RenderedName is MCO's name for a pool's rendered config:
// rendered-<pool>-<hex md5 of salt + YAML of the spec>. The YAML is
// sigs.k8s.io/yaml's, the maintained fork of the ghodss/yaml MCO uses; both
// go JSON → yaml.v2 with sorted keys, so the bytes are the same.
func RenderedName(pool string, spec mcfgv1.MachineConfigSpec) (string, error) {
	sum, err := specHash(spec)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("rendered-%s-%s", pool, sum), nil
}

func specHash(spec mcfgv1.MachineConfigSpec) (string, error) {
	data, err := yaml.Marshal(spec)
	if err != nil {
		return "", fmt.Errorf("hashing rendered spec: %w", err)
	}
	h := md5.New() //nolint:gosec // see import
	h.Write(salt)
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil)), nil
}
