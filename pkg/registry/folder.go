package registry

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"go.podman.io/image/v5/pkg/sysregistriesv2"
	"go.podman.io/image/v5/types"
)

// caFile is the one file WriteDir puts in a host's certs.d folder.
const caFile = "ca.crt"

// WriteDir writes c as a registries folder: registries.conf (always, an
// empty one for a nil or empty Config, so buildah pointed at it never
// falls back to the machine's /etc/containers/registries.conf) and
// certs.d/<host[:port]>/ca.crt per CA. dir is created if missing; files
// of the same names are replaced. The output is deterministic: TOML in
// field order with entries as they are in c (FromCluster sorts them), CA
// folders in name order. The file is checked by loading it the way
// containers/image does, so a step never receives one it would refuse.
func (c *Config) WriteDir(dir string) error {
	if c == nil {
		c = &Config{}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("writing registries folder: %w", err)
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(c.Registries); err != nil {
		return fmt.Errorf("encoding %s: %w", RegistriesConfFile, err)
	}
	conf := filepath.Join(dir, RegistriesConfFile)
	if err := os.WriteFile(conf, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing registries folder: %w", err)
	}
	if err := checkWithContainersImage(dir); err != nil {
		return err
	}
	hosts := make([]string, 0, len(c.CAs))
	for h := range c.CAs {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		// The host becomes a folder name: refuse anything but host[:port].
		if !anchoredDomain().MatchString(h) || strings.Contains(h, "..") {
			return fmt.Errorf("writing registries folder: CA for %q: not a registry host[:port]", h)
		}
		if err := checkPEM(c.CAs[h]); err != nil {
			return fmt.Errorf("writing registries folder: CA for %s: %w", h, err)
		}
		d := filepath.Join(dir, CertsDir, h)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("writing registries folder: %w", err)
		}
		if err := os.WriteFile(filepath.Join(d, caFile), c.CAs[h], 0o644); err != nil {
			return fmt.Errorf("writing registries folder: %w", err)
		}
	}
	return nil
}

// LoadDir reads a registries folder written by WriteDir (or by hand). An
// empty dir means no Config: $(workspaces.X.path) of an unbound optional
// Tekton workspace is "". A named folder that does not exist, or has no
// registries.conf, is an error naming it.
//
// registries.conf is read strictly (an unknown key is an error, where
// containers/image only logs it at debug level: a misspelt "blocked" must
// not silently unblock a registry) and then loaded by containers/image
// itself, which refuses what CRI-O and buildah would refuse. In
// certs.d/<host[:port]>/, every *.crt file is a CA for that host, in name
// order, as containers/image reads them; client certificates (*.cert,
// *.key) are refused, since kiln's own pulls could not present them.
// Entries whose names start with ".." (a Kubernetes volume's bookkeeping)
// are skipped.
func LoadDir(dir string) (*Config, error) {
	if dir == "" {
		return nil, nil
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("reading registries folder: %w", err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, RegistriesConfFile))
	if err != nil {
		return nil, fmt.Errorf("reading registries folder: %w", err)
	}
	c := &Config{}
	if err := decodeConf(raw, &c.Registries); err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, RegistriesConfFile), err)
	}
	if err := checkWithContainersImage(dir); err != nil {
		return nil, err
	}
	if c.CAs, err = loadCerts(filepath.Join(dir, CertsDir)); err != nil {
		return nil, err
	}
	return c, nil
}

// decodeConf decodes registries.conf v2 TOML, refusing unknown keys.
func decodeConf(raw []byte, conf *sysregistriesv2.V2RegistriesConf) error {
	meta, err := toml.Decode(string(raw), conf)
	if err != nil {
		return err
	}
	if keys := meta.Undecoded(); len(keys) > 0 {
		names := make([]string, len(keys))
		for i, k := range keys {
			names[i] = k.String()
		}
		return fmt.Errorf("unknown key %s (kiln reads containers-registries.conf(5) version 2 only)", strings.Join(names, ", "))
	}
	return nil
}

// checkWithContainersImage loads dir's registries.conf with
// containers/image, the code CRI-O, buildah and skopeo run, and returns
// its refusal. Drop-in folders are not read: a registries.conf.d in dir is
// an error rather than configuration kiln's own pulls would ignore.
func checkWithContainersImage(dir string) error {
	dropIns := filepath.Join(dir, "registries.conf.d")
	if _, err := os.Stat(dropIns); err == nil {
		return fmt.Errorf("reading registries folder: %s: drop-in folders are not supported, put every entry in %s", dropIns, RegistriesConfFile)
	}
	sys := &types.SystemContext{SystemRegistriesConfPath: filepath.Join(dir, RegistriesConfFile), SystemRegistriesConfDirPath: dropIns}
	if _, err := sysregistriesv2.TryUpdatingCache(sys); err != nil {
		return fmt.Errorf("reading %s as containers/image does: %w", sys.SystemRegistriesConfPath, err)
	}
	return nil
}

// loadCerts reads certs.d: host[:port] → the concatenated *.crt files.
func loadCerts(certs string) (map[string][]byte, error) {
	entries, err := os.ReadDir(certs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading registries folder: %w", err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		p := filepath.Join(certs, e.Name())
		if !e.IsDir() || !anchoredDomain().MatchString(e.Name()) {
			return nil, fmt.Errorf("reading %s: not a folder named for a registry host[:port]", p)
		}
		pem, err := hostCerts(p)
		if err != nil {
			return nil, err
		}
		if pem != nil {
			out[e.Name()] = pem
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func hostCerts(dir string) ([]byte, error) {
	files, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading registries folder: %w", err)
	}
	var bundle []byte
	for _, f := range files {
		p := filepath.Join(dir, f.Name())
		switch filepath.Ext(f.Name()) {
		case ".cert", ".key":
			return nil, fmt.Errorf("reading %s: client certificates are not supported", p)
		case ".crt":
		default:
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading registries folder: %w", err)
		}
		if err := checkPEM(data); err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		if len(bundle) > 0 && !bytes.HasSuffix(bundle, []byte("\n")) {
			bundle = append(bundle, '\n')
		}
		bundle = append(bundle, data...)
	}
	return bundle, nil
}
