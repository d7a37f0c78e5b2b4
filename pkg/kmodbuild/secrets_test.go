package kmodbuild_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kiln-dev/kiln/pkg/kmodbuild"
)

// secretsLayout is a Task's /workspace: the build-secrets folder beside
// kiln's cosign key, as Tekton mounts workspaces side by side.
type secretsLayout struct {
	root, secrets, key string
}

func newSecretsLayout(t *testing.T) secretsLayout {
	t.Helper()
	root := t.TempDir()
	l := secretsLayout{root: root, secrets: filepath.Join(root, "build-secrets"), key: filepath.Join(root, "cosign-key", "cosign.key")}
	writeFile(t, l.key, "kiln-private-key")
	// A Secret volume as the kubelet writes it: a timestamped folder, the
	// ..data link to it, and each key a link through ..data.
	writeFile(t, filepath.Join(l.secrets, "build-secret", "..2026_11_27_00_00_00.1", "token"), "t0k3n")
	mustSymlink(t, "..2026_11_27_00_00_00.1", filepath.Join(l.secrets, "build-secret", "..data"))
	mustSymlink(t, "..data/token", filepath.Join(l.secrets, "build-secret", "token"))
	return l
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestSecretFilesHandsOnlyTheModuleDay0sSecretsToTheBuild: the allow-list
// gives buildah the listed Secrets' keys, in either mounted layout, and
// refuses every name or file that would reach beyond them (the workspace
// beside holds kiln's cosign key), naming the field and the rule.
func TestSecretFilesHandsOnlyTheModuleDay0sSecretsToTheBuild(t *testing.T) {
	cases := []struct {
		name    string
		names   []string
		edit    func(t *testing.T, l secretsLayout)
		want    map[string]string // ids -> path below l.secrets (symlinks resolved)
		wantErr string
	}{
		{
			name: "a Secret volume's keys", names: []string{"build-secret"},
			want: map[string]string{"build-secret_token": "build-secret/..2026_11_27_00_00_00.1/token"},
		},
		{
			name: "a file per id", names: []string{"flat"},
			edit: func(t *testing.T, l secretsLayout) { writeFile(t, filepath.Join(l.secrets, "flat_token"), "x") },
			want: map[string]string{"flat_token": "flat_token"},
		},
		{
			name: "only the listed Secret", names: []string{"build-secret"},
			edit: func(t *testing.T, l secretsLayout) {
				writeFile(t, filepath.Join(l.secrets, "other", "token"), "not yours")
			},
			want: map[string]string{"build-secret_token": "build-secret/..2026_11_27_00_00_00.1/token"},
		},
		{
			name: "a name climbing to the cosign key", names: []string{"../cosign-key"},
			wantErr: `spec.osMapping.build.secrets[0].name "../cosign-key": not a Secret name: a lowercase RFC 1123 subdomain`,
		},
		{
			name: "an absolute name", names: []string{"/etc"},
			wantErr: `spec.osMapping.build.secrets[0].name "/etc": not a Secret name`,
		},
		{
			name: "a name with a slash", names: []string{"build-secret/..data"},
			wantErr: `spec.osMapping.build.secrets[0].name "build-secret/..data": not a Secret name`,
		},
		{
			name: "an empty name", names: []string{""},
			wantErr: `spec.osMapping.build.secrets[0].name "": not a Secret name`,
		},
		{
			name: "a name listed twice", names: []string{"build-secret", "build-secret"},
			wantErr: `spec.osMapping.build.secrets[1].name "build-secret": named twice`,
		},
		{
			name: "a key linked to the cosign key", names: []string{"evil"},
			edit: func(t *testing.T, l secretsLayout) {
				mustSymlink(t, "../../cosign-key/cosign.key", filepath.Join(l.secrets, "evil", "token"))
			},
			wantErr: `spec.osMapping.build.secrets[0].name "evil": `,
		},
		{
			name: "a key linked by absolute path", names: []string{"evil"},
			edit:    func(t *testing.T, l secretsLayout) { mustSymlink(t, l.key, filepath.Join(l.secrets, "evil", "token")) },
			wantErr: "outside",
		},
		{
			name: "a Secret folder linked to the key's folder", names: []string{"evil"},
			edit: func(t *testing.T, l secretsLayout) {
				mustSymlink(t, "../cosign-key", filepath.Join(l.secrets, "evil"))
			},
			wantErr: "outside",
		},
		{
			name: "a file per id linked out", names: []string{"evil"},
			edit:    func(t *testing.T, l secretsLayout) { mustSymlink(t, l.key, filepath.Join(l.secrets, "evil_token")) },
			wantErr: "outside",
		},
		{
			name: "a key through /proc/self/root", names: []string{"evil"},
			edit: func(t *testing.T, l secretsLayout) {
				mustSymlink(t, "/proc/self/root"+l.key, filepath.Join(l.secrets, "evil", "token"))
			},
			wantErr: "outside",
		},
		{
			name: "a FIFO key", names: []string{"evil"},
			edit: func(t *testing.T, l secretsLayout) {
				os.MkdirAll(filepath.Join(l.secrets, "evil"), 0o755)
				if err := syscall.Mkfifo(filepath.Join(l.secrets, "evil", "token"), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: `key "token" is not a regular file`,
		},
		{
			name: "a key larger than a Secret", names: []string{"big"},
			edit: func(t *testing.T, l secretsLayout) {
				writeFile(t, filepath.Join(l.secrets, "big", "blob"), strings.Repeat("x", kmodbuild.MaxSecretBytes+1))
			},
			wantErr: `key "blob" is 1048577 bytes, over the 1048576 a Secret may hold`,
		},
		{
			name: "a Secret with no key", names: []string{"empty"},
			edit:    func(t *testing.T, l secretsLayout) { os.MkdirAll(filepath.Join(l.secrets, "empty"), 0o755) },
			wantErr: `spec.osMapping.build.secrets[0].name "empty": not mounted`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := newSecretsLayout(t)
			if c.edit != nil {
				c.edit(t, l)
			}
			got, err := kmodbuild.SecretFiles(l.secrets, c.names)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("SecretFiles(%q) = %v, %v; want error containing %q", c.names, got, err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			real, _ := filepath.EvalSymlinks(l.secrets)
			rel := map[string]string{}
			for id, p := range got {
				r, err := filepath.Rel(real, p)
				if err != nil {
					t.Fatal(err)
				}
				rel[id] = r
			}
			if d := cmp.Diff(c.want, rel); d != "" {
				t.Errorf("ids (-want +got):\n%s", d)
			}
		})
	}
}

// TestSecretFilesWithoutAFolderNamesTheSecrets: a ModuleDay0 that lists
// Secrets in a run with no build-secrets folder fails before any build.
func TestSecretFilesWithoutAFolderNamesTheSecrets(t *testing.T) {
	_, err := kmodbuild.SecretFiles("", []string{"build-secret"})
	if want := `spec.osMapping.build.secrets ["build-secret"]: no build secrets are mounted`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if got, err := kmodbuild.SecretFiles("", nil); err != nil || len(got) != 0 {
		t.Fatalf("no secrets listed: %v, %v", got, err)
	}
}
