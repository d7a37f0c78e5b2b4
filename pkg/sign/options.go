package sign

import "os"

// SigningOptions name a cosign key. The key itself is read from a file (a
// mounted Secret) and never from a flag, so it cannot show up in a pod spec
// or a process listing.
type SigningOptions struct {
	KeyPath string
	// PasswordEnv names the environment variable holding the key password.
	PasswordEnv string
}

// Defaults of the signing options: the signing-key workspace as the
// Tasks mount it, and cosign's own password variable.
const (
	DefaultKey         = "/etc/kiln/signing/cosign.key"
	DefaultPasswordEnv = "COSIGN_PASSWORD"
)

// DefaultSigningOptions returns the signing options with their defaults.
func DefaultSigningOptions() SigningOptions {
	return SigningOptions{KeyPath: DefaultKey, PasswordEnv: DefaultPasswordEnv}
}

// Password returns the key password from the environment.
func (o *SigningOptions) Password() []byte { return []byte(os.Getenv(o.PasswordEnv)) }
