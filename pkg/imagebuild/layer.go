package imagebuild

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"sort"
	"strings"
	"time"

	ign "github.com/coreos/ignition/v2/config/v3_5"
	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/ignres"
	"github.com/kiln-dev/kiln/pkg/mcsize"
	"github.com/kiln-dev/kiln/pkg/nodeimport"
)

// CurrentConfigPath is where the MCD keeps the config a node runs; kiln puts
// it in the image so the node and the image agree on what was applied.
const CurrentConfigPath = "/etc/machine-config-daemon/currentconfig"

// systemdDir is where Ignition and the MCD write units (admin units).
const systemdDir = "/etc/systemd/system"

// layerTime is the mtime of every entry: a fixed value makes the layer
// reproducible. 2000-01-01 rather than the epoch because some tools treat a
// zero mtime as "unknown".
var layerTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Entry is one filesystem object of the layer.
type Entry struct {
	Path     string // absolute, cleaned
	Type     byte   // tar.TypeReg, tar.TypeDir, tar.TypeSymlink, tar.TypeLink
	Mode     int64  // permission bits
	UID, GID int
	Data     []byte // regular files held in memory
	Link     string // symlink or hard link target
	// content stands for Data for storage.files: the still-compressed
	// bytes, inflated straight into the layer, so a file's decompressed
	// bytes are never held besides the layer itself.
	content *content
	// Origin says where the entry came from, for reports and errors.
	Origin string
}

// Plan is what the rendered config puts into the image.
type Plan struct {
	// Entries are sorted by path, parents first.
	Entries []Entry
	// CurrentConfig is the normalised rendered MachineConfig written to
	// CurrentConfigPath; the fingerprint hashes exactly these bytes.
	CurrentConfig []byte
	// NeedsBuildah lists why the fast path cannot express the config
	// (extensions, kernelType, a unit of the base to enable, …). Empty means
	// the fast path is complete.
	NeedsBuildah []string
	// EnableBaseUnits are units of the base to `systemctl enable` in a build.
	EnableBaseUnits []string
	// Warnings are the node rules' warnings about the MachineConfig's
	// files: content a node sees only on first install, or only once
	// MCO's daemon writes it.
	Warnings []nodeimport.Finding
}

// PlanLayer turns a rendered MachineConfig into the entries of one layer.
func PlanLayer(mc *mcfgv1.MachineConfig) (*Plan, error) {
	if mc == nil || mc.Name == "" {
		return nil, fmt.Errorf("planning layer: rendered MachineConfig has no metadata.name")
	}
	// A rendered config is never larger than MCO's cap, measured as render
	// and MCO measure it (pkg/mcsize: the object's compact JSON, not the
	// indented file it was read from): refuse before parsing.
	if err := mcsize.Check(mcsize.FromObject(mc, LabelPool)); err != nil {
		return nil, fmt.Errorf("planning layer: %w", err)
	}
	cfg, err := parseIgnition(mc)
	if err != nil {
		return nil, err
	}
	p := &planner{mc: mc.Name, entries: map[string]Entry{}, content: ignres.ContentLimit()}
	for _, d := range cfg.Storage.Directories {
		p.directory(d)
	}
	for _, f := range cfg.Storage.Files {
		if p.full {
			break
		}
		p.file(f)
	}
	for _, l := range cfg.Storage.Links {
		p.link(l)
	}
	for _, u := range cfg.Systemd.Units {
		p.unit(u)
	}
	p.nodeRules()
	if len(p.errs) > 0 {
		return nil, exitcode.InputRejected(fmt.Errorf("planning layer for MachineConfig %s: %s", mc.Name, strings.Join(p.errs, "; ")))
	}
	current, err := normalisedConfig(mc)
	if err != nil {
		return nil, err
	}
	p.add(Entry{Path: CurrentConfigPath, Type: tar.TypeReg, Mode: 0o644, Data: current, Origin: "currentconfig"})
	plan := &Plan{Entries: p.sorted(), CurrentConfig: current, NeedsBuildah: p.buildah, EnableBaseUnits: p.enableBase, Warnings: p.warnings}
	plan.NeedsBuildah = append(plan.NeedsBuildah, specNeedsBuildah(mc)...)
	return plan, nil
}

// specNeedsBuildah names the MachineConfig fields only a container build can
// apply: they run rpm-ostree inside the image.
func specNeedsBuildah(mc *mcfgv1.MachineConfig) []string {
	var why []string
	if len(mc.Spec.Extensions) > 0 {
		why = append(why, fmt.Sprintf("spec.extensions %v need rpm-ostree install", mc.Spec.Extensions))
	}
	if kt := mc.Spec.KernelType; kt != "" && kt != "default" {
		why = append(why, fmt.Sprintf("spec.kernelType %q needs a kernel swap", kt))
	}
	return why
}

func parseIgnition(mc *mcfgv1.MachineConfig) (igntypes.Config, error) {
	raw := mc.Spec.Config.Raw
	if len(raw) == 0 {
		return igntypes.Config{}, nil
	}
	if err := ignres.CheckShape(raw); err != nil {
		return igntypes.Config{}, fmt.Errorf("parsing spec.config of MachineConfig %s: %w", mc.Name, err)
	}
	cfg, rpt, err := ign.Parse(raw)
	if err != nil {
		return igntypes.Config{}, fmt.Errorf("parsing spec.config of MachineConfig %s as Ignition 3.5: %w (%s)", mc.Name, err, rpt.String())
	}
	return cfg, nil
}

// normalisedConfig keeps what identifies the rendered config (kind, name,
// labels, annotations, spec) and drops what the apiserver adds
// (resourceVersion, uid, timestamps), so the same rendered config gives the
// same bytes whether it came from a cluster or a directory.
func normalisedConfig(mc *mcfgv1.MachineConfig) ([]byte, error) {
	clean := mcfgv1.MachineConfig{Spec: mc.Spec}
	clean.APIVersion = mcfgv1.GroupVersion.String()
	clean.Kind = "MachineConfig"
	clean.Name = mc.Name
	clean.Labels = mc.Labels
	clean.Annotations = mc.Annotations
	b, err := json.Marshal(&clean)
	if err != nil {
		return nil, fmt.Errorf("encoding MachineConfig %s for %s: %w", mc.Name, CurrentConfigPath, err)
	}
	return b, nil
}

type planner struct {
	mc string
	// content bounds the decompressed bytes of all files together.
	content    *ignres.Limit
	entries    map[string]Entry
	errs       []string
	buildah    []string
	enableBase []string
	// full is set once the content budget is spent: no later file is read.
	full bool
	// warnings are the node rules' warnings (nodeRules).
	warnings []nodeimport.Finding
}

func (p *planner) errorf(format string, args ...any) {
	p.errs = append(p.errs, fmt.Sprintf(format, args...))
}

// add records an entry; a later entry for the same path replaces an earlier
// one, as a later Ignition write would on disk.
func (p *planner) add(e Entry) {
	e.Path = coreosPath(path.Clean(e.Path))
	p.entries[e.Path] = e
}

// ostreeSymlinks are the top-level folders that are symlinks into /var on
// CoreOS (ostree). A build writing /usr/local/bin/x follows the symlink and
// lands in /var/usrlocal/bin/x; a tar entry "usr/local/..." would instead
// replace the symlink with a folder in the image. So the planner writes what
// the build would: the /var target.
var ostreeSymlinks = map[string]string{
	"/usr/local": "/var/usrlocal",
	"/opt":       "/var/opt",
	"/home":      "/var/home",
	"/root":      "/var/roothome",
	"/srv":       "/var/srv",
	"/mnt":       "/var/mnt",
}

func coreosPath(p string) string {
	for from, to := range ostreeSymlinks {
		if p == from || strings.HasPrefix(p, from+"/") {
			return to + strings.TrimPrefix(p, from)
		}
	}
	return p
}

func (p *planner) owner(field string, n igntypes.Node) (uid, gid int, ok bool) {
	uid, ok1 := id(n.User.ID, n.User.Name)
	gid, ok2 := id(n.Group.ID, n.Group.Name)
	if !ok1 || !ok2 {
		// Names other than root need the node's /etc/passwd, which the
		// image's need not match (ostree merges /etc). MCO resolves them on
		// the node.
		p.errorf("%s %s: user/group given by name; the image build needs a numeric id (user.id, group.id)", field, n.Path)
		return 0, 0, false
	}
	return uid, gid, true
}

func id(num *int, name *string) (int, bool) {
	switch {
	case num != nil:
		return *num, true
	case name == nil || *name == "" || *name == "root":
		return 0, true
	default:
		return 0, false
	}
}

func mode(m *int, def int64) int64 {
	if m == nil {
		return def
	}
	return int64(*m) & 0o7777
}

func (p *planner) directory(d igntypes.Directory) {
	uid, gid, ok := p.owner("storage.directories", d.Node)
	if !ok {
		return
	}
	p.add(Entry{Path: d.Path, Type: tar.TypeDir, Mode: mode(d.Mode, 0o755), UID: uid, GID: gid, Origin: "storage.directories"})
}

func (p *planner) file(f igntypes.File) {
	uid, gid, ok := p.owner("storage.files", f.Node)
	if !ok {
		return
	}
	if err := ignres.CheckFileMode(f.Mode); err != nil {
		// The same refusal as render's: a rendered.json edited after
		// render must not smuggle a setuid file into the image.
		p.errorf("storage.files %s: [%s] %v (MCO's ValidateIgnition, as render refuses)", f.Path, RuleMode, err)
		return
	}
	if len(f.Append) > 0 {
		// MCO rejects append too: a file's content must be whole.
		p.errorf("storage.files %s: append is not supported", f.Path)
		return
	}
	c, err := decodeContents(f.Contents, p.content)
	if err != nil {
		p.errorf("storage.files %s: %v", f.Path, err)
		if errors.Is(err, ignres.ErrTooLarge) {
			p.full = true
		}
		return
	}
	p.add(Entry{Path: f.Path, Type: tar.TypeReg, Mode: mode(f.Mode, 0o644), UID: uid, GID: gid, content: c, Origin: "storage.files"})
}

func (p *planner) link(l igntypes.Link) {
	uid, gid, ok := p.owner("storage.links", l.Node)
	if !ok {
		return
	}
	if l.Target == nil || *l.Target == "" {
		p.errorf("storage.links %s: target is empty", l.Path)
		return
	}
	typ := byte(tar.TypeSymlink)
	target := *l.Target
	if l.Hard != nil && *l.Hard {
		typ = tar.TypeLink
		target = strings.TrimPrefix(coreosPath(path.Clean(target)), "/")
	}
	p.add(Entry{Path: l.Path, Type: typ, Mode: 0o777, UID: uid, GID: gid, Link: target, Origin: "storage.links"})
}

// content is a file's contents as the rendered config holds them (data:
// URL decoded, still compressed), already checked.
type content struct {
	raw  []byte
	res  igntypes.Resource
	size int64
}

// write inflates the content into w, checking it again against its hash
// and its measured size.
func (c *content) write(w io.Writer) error {
	_, err := ignres.Copy(w, bytes.NewReader(c.raw), c.res, ignres.NewLimit(c.size, "size measured when planning"))
	return err
}

// decodeContents decodes a data: URL (Ignition's own dataurl library),
// decompresses it and checks verification.hash over the decompressed
// content as the node's Ignition would (pkg/ignres), charging lim: a bomb
// is refused once it passes what is left. Only the size is kept; the layer
// inflates the content again as it writes it. Remote sources were embedded
// by render (pkg/render), so any other scheme here is an error.
func decodeContents(r igntypes.Resource, lim *ignres.Limit) (*content, error) {
	if r.Source == nil {
		return &content{raw: []byte{}}, nil
	}
	u, err := url.Parse(*r.Source)
	if err != nil {
		return nil, fmt.Errorf("contents.source: %w", err)
	}
	if u.Scheme != "data" {
		return nil, fmt.Errorf("contents.source: scheme %q; render embeds remote sources as data: URLs, only data: is accepted here", u.Scheme)
	}
	raw, err := ignres.DataURL(*r.Source)
	if err != nil {
		return nil, fmt.Errorf("contents.source: %w", err)
	}
	n, err := ignres.Copy(io.Discard, bytes.NewReader(raw), r, lim)
	if err != nil {
		return nil, fmt.Errorf("contents: %w", err)
	}
	return &content{raw: raw, res: r, size: n}, nil
}

// size is the entry's content length.
func (e Entry) size() int64 {
	if e.content != nil {
		return e.content.size
	}
	return int64(len(e.Data))
}

// sorted returns every entry plus the parent folders they need, sorted by
// path so parents come before children. Missing parents are root-owned 0755,
// as Ignition creates them.
func (p *planner) sorted() []Entry {
	all := map[string]Entry{}
	for k, e := range p.entries {
		all[k] = e
		for dir := path.Dir(k); dir != "/" && dir != "."; dir = path.Dir(dir) {
			if _, ok := p.entries[dir]; !ok {
				all[dir] = Entry{Path: dir, Type: tar.TypeDir, Mode: 0o755, Origin: "parent"}
			}
		}
	}
	out := make([]Entry, 0, len(all))
	for _, e := range all {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Tar writes the entries as one uncompressed tar stream: fixed mtime, no
// user or group names, paths relative to / as OCI layers have them.
func (pl *Plan) Tar() ([]byte, error) {
	// Sized once: growing by doubling would hold up to twice the layer.
	size := 1024
	for _, e := range pl.Entries {
		size += int(e.size()) + 2048
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	tw := tar.NewWriter(buf)
	for _, e := range pl.Entries {
		h := &tar.Header{
			Typeflag: e.Type,
			Name:     strings.TrimPrefix(e.Path, "/"),
			Mode:     e.Mode,
			Uid:      e.UID,
			Gid:      e.GID,
			ModTime:  layerTime,
			Linkname: e.Link,
			Format:   tar.FormatPAX,
		}
		if e.Type == tar.TypeDir {
			h.Name += "/"
		}
		if !ustarName(h.Name, 155) || !ustarName(h.Linkname, 0) {
			// Go writes a PAX path record for such a name, which some
			// nodes' import (ostree-ext late 2024 to 2026) applies after
			// moving etc to usr/etc, committing the file at /etc. A GNU
			// long name is read before the move on every node.
			h.Format = tar.FormatGNU
		}
		if e.Type == tar.TypeReg {
			h.Size = e.size()
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("writing layer entry %s: %w", e.Path, err)
		}
		if e.Type == tar.TypeReg {
			var err error
			if e.content != nil {
				err = e.content.write(tw)
			} else {
				_, err = tw.Write(e.Data)
			}
			if err != nil {
				return nil, fmt.Errorf("writing layer entry %s: %w", e.Path, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("closing layer: %w", err)
	}
	return buf.Bytes(), nil
}

// ustarName reports whether a USTAR header holds name without a PAX
// record: ASCII, and at most 100 bytes or split at a slash into a prefix
// of at most prefixMax bytes and a name of at most 100.
func ustarName(name string, prefixMax int) bool {
	for i := 0; i < len(name); i++ {
		if name[i] >= 0x80 || name[i] == 0 {
			return false
		}
	}
	if len(name) <= 100 {
		return true
	}
	for i := len(name) - 1; i > 0; i-- {
		if name[i] == '/' && i <= prefixMax && len(name)-i-1 <= 100 && len(name)-i-1 > 0 {
			return true
		}
	}
	return false
}
