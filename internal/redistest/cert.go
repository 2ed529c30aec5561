package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Cert is a self-signed certificate for "localhost" and 127.0.0.1 and the
// pool that trusts it (see SelfSigned and MakeCert for how long it is
// valid).
type Cert struct {
	TLS  tls.Certificate
	Pool *x509.CertPool
	// CertFile and KeyFile hold it in PEM, in the test's temporary
	// directory: what redis-server's --tls-cert-file and --tls-key-file
	// take.
	CertFile, KeyFile string
}

// SelfSigned makes a Cert for the test, valid for an hour around its
// making, in the test's temporary directory; it fails the test on error.
func SelfSigned(tb testing.TB) Cert {
	tb.Helper()
	c, err := MakeCert(tb.TempDir(), time.Hour)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// MakeCert makes a Cert valid from an hour before its making until valid
// after it, and writes its PEM files into dir.
func MakeCert(dir string, valid time.Duration) (Cert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Cert{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "localhost"},
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(valid),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return Cert{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return Cert{}, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return Cert{}, err
	}
	c := Cert{TLS: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, Pool: x509.NewCertPool()}
	c.Pool.AddCert(leaf)
	c.CertFile, c.KeyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(c.CertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return Cert{}, err
	}
	if err := os.WriteFile(c.KeyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return Cert{}, err
	}
	return c, nil
}
