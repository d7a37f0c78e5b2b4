package registry

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// trustedCAs reads the additionalTrustedCA ConfigMap into host[:port] →
// PEM. Like MCO, a data value that is base64 of the PEM is decoded, and
// binaryData is read as it is.
func trustedCAs(cm *corev1.ConfigMap) (map[string][]byte, error) {
	if cm == nil {
		return nil, nil
	}
	where := "ConfigMap " + cm.Namespace + "/" + cm.Name
	keys := make([]string, 0, len(cm.Data)+len(cm.BinaryData))
	for k := range cm.Data {
		keys = append(keys, k)
	}
	for k := range cm.BinaryData {
		if _, dup := cm.Data[k]; dup {
			return nil, fmt.Errorf("%s: binaryData[%s]: key is also in data", where, k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := map[string][]byte{}
	var errs []error
	for _, k := range keys {
		field := "binaryData"
		pemData, isText := cm.Data[k]
		data := cm.BinaryData[k]
		if isText {
			field, data = "data", textPEM(pemData)
		}
		host, err := caHost(k)
		if err == nil {
			err = checkPEM(data)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %s[%s]: %w", where, field, k, err))
			continue
		}
		out[host] = data
	}
	return out, errors.Join(errs...)
}

// textPEM returns a data value as PEM, decoding base64 when that is what
// it holds.
func textPEM(v string) []byte {
	if !bytes.Contains([]byte(v), []byte("-----BEGIN")) {
		if raw, err := base64.StdEncoding.DecodeString(v); err == nil {
			return raw
		}
	}
	return []byte(v)
}

// checkPEM requires at least one certificate and no other PEM block, so
// a private key or a damaged certificate pasted by mistake is caught here,
// not as a TLS failure later. Text between blocks is ignored, as Go's
// and containers/image's readers ignore it.
func checkPEM(data []byte) error {
	n := 0
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return fmt.Errorf("not a PEM certificate bundle: holds a %s block", b.Type)
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return fmt.Errorf("certificate %d: %w", n+1, err)
		}
		n++
	}
	if n == 0 {
		return errors.New("no PEM certificate")
	}
	return nil
}
