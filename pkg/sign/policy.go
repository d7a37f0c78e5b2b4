package sign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"go.podman.io/image/v5/docker"
	"go.podman.io/image/v5/image"
	"go.podman.io/image/v5/signature"
	"go.podman.io/image/v5/types"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/work"
)

// PolicyInput says which image to check against which key.
type PolicyInput struct {
	// Image is the reference CRI-O would pull (osImageURL: repo@sha256:…).
	Image string
	// KeyPath is the cosign public key the policy names. In the fragment a
	// cluster admin installs it is NodeKeyPath instead.
	KeyPath string
	// NodeKeyPath is where the key lives on the node, for the fragment.
	NodeKeyPath string
	// Insecure reaches the registry over plain HTTP / without TLS checks.
	Insecure bool
	AuthFile string
	// CertDir holds a registry CA (ca.crt) for TLS registries.
	CertDir string
	// RegistriesDir is a registries folder (registry.RegistryOptions.ConfigDir):
	// its registries.conf gives the mirrors, insecure and blocked flags the
	// nodes' CRI-O applies, and certs.d/<host>/ca.crt the per-registry CAs.
	// Empty means containers/image's defaults.
	RegistriesDir string
	// OutDir receives policy.json and registries.d/ (the fragment).
	OutDir string
}

// DefaultNodeKeyPath is where the fragment expects the public key on nodes.
const DefaultNodeKeyPath = "/etc/pki/kiln/cosign.pub"

// ErrPolicy wraps every refusal: the image was checked and rejected.
var ErrPolicy = errors.New("image refused by signature policy")

// PolicyFiles are what VerifyPolicy wrote.
type PolicyFiles struct {
	Policy, Registries string
}

// VerifyPolicy makes the check CRI-O makes before running an image: the
// containers/image policy with a sigstoreSigned requirement for the
// repository, signatures found through sigstore attachments
// (registries.d use-sigstore-attachments: true). It writes the policy and
// registries.d fragments a cluster admin would install (with NodeKeyPath),
// and evaluates an equivalent policy that points at KeyPath.
func VerifyPolicy(ctx context.Context, in PolicyInput) (*PolicyFiles, error) {
	ref, err := name.ParseReference(in.Image)
	if err != nil {
		return nil, fmt.Errorf("verifying %q: %w", in.Image, err)
	}
	repo := ref.Context().Name()
	nodeKey := in.NodeKeyPath
	if nodeKey == "" {
		nodeKey = DefaultNodeKeyPath
	}
	files, err := writeFragments(in.OutDir, repo, nodeKey)
	if err != nil {
		return nil, err
	}
	policy, err := repoPolicy(repo, in.KeyPath)
	if err != nil {
		return nil, err
	}
	pc, err := signature.NewPolicyContext(policy)
	if err != nil {
		return nil, fmt.Errorf("verifying %s: loading policy: %w", in.Image, err)
	}
	defer pc.Destroy()

	iref, err := docker.ParseReference("//" + in.Image)
	if err != nil {
		return nil, fmt.Errorf("verifying %s: %w", in.Image, err)
	}
	sys := &types.SystemContext{
		RegistriesDirPath: filepath.Join(in.OutDir, "registries.d"),
		AuthFilePath:      in.AuthFile,
		DockerCertPath:    in.CertDir,
	}
	if in.Insecure {
		sys.DockerInsecureSkipTLSVerify = types.OptionalBoolTrue
	}
	if in.RegistriesDir != "" {
		setRegistriesDir(sys, in.RegistriesDir)
	}
	src, err := iref.NewImageSource(ctx, sys)
	if err != nil {
		return files, readError(in.Image, err)
	}
	defer src.Close()
	unparsed := image.UnparsedInstance(src, nil)
	if _, _, err := unparsed.Manifest(ctx); err != nil {
		return files, readError(in.Image, err)
	}
	allowed, err := pc.IsRunningImageAllowed(ctx, unparsed)
	if ferr := faultOf(in.Image, "reading its signatures", err); ferr != nil {
		// The signatures could not be fetched: no verdict, not a refusal.
		return files, ferr
	}
	if err != nil || !allowed {
		return files, fmt.Errorf("verifying %s against sigstoreSigned(key %s) for %s: %w: %s", in.Image, in.KeyPath, repo, ErrPolicy, explain(err))
	}
	return files, nil
}

// faultOf returns the error of a registry that did not answer (see
// exitcode.IsFault) while containers/image read img, saying which; nil when
// err is nil or is an answer about the image. containers/image has its
// own error types for HTTP statuses; go-containerregistry's and the
// network's are exitcode.IsFault's.
func faultOf(img, doing string, err error) error {
	if err == nil {
		return nil
	}
	var unauth docker.ErrUnauthorizedForCredentials
	msg := strings.ToLower(err.Error())
	if errors.As(err, &unauth) || strings.Contains(msg, "authentication required") || strings.Contains(msg, "unauthorized") {
		return fmt.Errorf("verifying %s: %s: %w (check the credentials in --registry-auth-file): %w", img, doing, registry.ErrAuth, err)
	}
	var status docker.UnexpectedHTTPStatusError
	if errors.As(err, &status) && exitcode.FaultStatus(status.StatusCode) {
		return fmt.Errorf("verifying %s: %s: %w (HTTP %d): %w", img, doing, registry.ErrUnreachable, status.StatusCode, err)
	}
	if exitcode.IsFault(err) {
		return fmt.Errorf("verifying %s: %s: %w: %w", img, doing, registry.ErrUnreachable, err)
	}
	return nil
}

// setRegistriesDir makes containers/image read the registries folder as the
// whole registries configuration: its registries.conf (when there is one)
// and drop-ins under it instead of the image's /etc/containers ones, and
// its certs.d for per-registry CAs.
func setRegistriesDir(sys *types.SystemContext, dir string) {
	conf := filepath.Join(dir, registry.RegistriesConfFile)
	if _, err := os.Stat(conf); err == nil {
		// An explicit path that does not exist is an error to
		// containers/image; a folder with only CAs has none.
		sys.SystemRegistriesConfPath = conf
		sys.SystemRegistriesConfDirPath = conf + ".d"
	}
	sys.DockerPerHostCertDirPath = filepath.Join(dir, registry.CertsDir)
}

// readError reports a failure to read the image, telling an authentication
// failure or a failing registry apart: reading the manifest gives no
// policy verdict, so it is never "not signed".
func readError(img string, err error) error {
	if ferr := faultOf(img, "reading the image", err); ferr != nil {
		return ferr
	}
	return fmt.Errorf("verifying %s: reading the image: %w", img, err)
}

// explain turns containers/image's policy errors into the reason an admin
// needs.
func explain(err error) string {
	if err == nil {
		return "not allowed"
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "no signature exists"):
		return "the image has no sigstore signature (unsigned, or the tag now points at a different manifest than the one signed): " + msg
	case strings.Contains(msg, "cryptographic signature verification failed"), strings.Contains(msg, "invalid signature"):
		return "a signature exists but does not verify with this key (wrong key or tampered signature): " + msg
	case strings.Contains(msg, "exceeded maximum allowed size"):
		return fmt.Sprintf("a layer of the image's signature artifact is over the %d-byte limit containers/image reads (the node's CRI-O refuses the image for it too; image-sign drops such layers when it next signs): %s", MaxAttachmentSize, msg)
	case strings.Contains(msg, "does not match"):
		return "the signature was made for a different image: " + msg
	}
	return msg
}

func repoPolicy(repo, keyPath string) (*signature.Policy, error) {
	req, err := signature.NewPRSigstoreSignedKeyPath(keyPath, identity())
	if err != nil {
		return nil, fmt.Errorf("building sigstoreSigned requirement: %w", err)
	}
	return &signature.Policy{
		Default: signature.PolicyRequirements{signature.NewPRReject()},
		Transports: map[string]signature.PolicyTransportScopes{
			"docker": {repo: {req}},
		},
	}, nil
}

// writeFragments writes what a cluster admin installs on nodes (as a
// MachineConfig or through the cluster image policy): a policy.json with the
// sigstoreSigned requirement for repo, and a registries.d file turning on
// sigstore attachments for it. The default of the fragment is
// insecureAcceptAnything, the node's usual default: the fragment is meant to
// be merged, and only adds the requirement for our repository.
func writeFragments(dir, repo, nodeKey string) (*PolicyFiles, error) {
	if dir == "" {
		return nil, fmt.Errorf("writing policy fragment: no output folder")
	}
	req, err := signature.NewPRSigstoreSignedKeyPath(nodeKey, identity())
	if err != nil {
		return nil, err
	}
	frag := &signature.Policy{
		Default:    signature.PolicyRequirements{signature.NewPRInsecureAcceptAnything()},
		Transports: map[string]signature.PolicyTransportScopes{"docker": {repo: {req}}},
	}
	b, err := json.MarshalIndent(frag, "", "  ")
	if err != nil {
		return nil, err
	}
	files := &PolicyFiles{Policy: filepath.Join(dir, work.PolicyFile), Registries: filepath.Join(dir, work.PolicyRegistriesDir, work.PolicyRegistriesFile)}
	if err := os.MkdirAll(filepath.Dir(files.Registries), 0o755); err != nil {
		return nil, fmt.Errorf("writing policy fragment: %w", err)
	}
	if err := os.WriteFile(files.Policy, append(b, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("writing policy fragment: %w", err)
	}
	regd := fmt.Sprintf("# kiln: find sigstore signatures of %s next to the image (cosign layout)\ndocker:\n  %s:\n    use-sigstore-attachments: true\n", repo, repo)
	if err := os.WriteFile(files.Registries, []byte(regd), 0o644); err != nil {
		return nil, fmt.Errorf("writing registries.d fragment: %w", err)
	}
	return files, nil
}

// identity is the signedIdentity rule: matchRepository. cosign signs the
// repository name (no tag) as the docker-reference, so the default
// matchRepoDigestOrExact only accepts digest references. Nodes pull
// osImageURL by digest, where both rules accept exactly the same images;
// matchRepository also lets a tag reference be checked, and then the
// signature must still cover the manifest the tag points at now.
func identity() signature.PolicyReferenceMatch { return signature.NewPRMMatchRepository() }
