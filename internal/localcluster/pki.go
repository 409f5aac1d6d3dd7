//go:build unix

package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certValidity is long enough for any test run or demo session, short enough
// that a leaked test CA is worthless soon.
const certValidity = 365 * 24 * time.Hour

// authority is the cluster CA. Every certificate of the cluster (serving,
// component clients, users) is signed by it, so one ca.crt verifies them all.
type authority struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
}

// keyPair is a PEM encoded certificate and its private key.
type keyPair struct {
	cert, key []byte
}

// newAuthority creates a self-signed CA. ECDSA P-256 keeps key generation
// instant, which matters for a start time budget of seconds.
func newAuthority(name string) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	tmpl, err := certTemplate(pkix.Name{CommonName: name})
	if err != nil {
		return nil, err
	}
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	return &authority{cert: cert, key: key, certPEM: pemBlock("CERTIFICATE", der)}, nil
}

// loadAuthority reads a CA written by save, so that another process (or a
// test after Attach) can mint more certificates for the same cluster.
func loadAuthority(certPath, keyPath string) (*authority, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("read CA certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("read CA key: %w", err)
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, errors.New("CA files are not PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse CA key: %w", err)
	}
	return &authority{cert: cert, key: key, certPEM: certPEM}, nil
}

func (a *authority) save(certPath, keyPath string) error {
	keyPEM, err := marshalKey(a.key)
	if err != nil {
		return err
	}
	return writeKeyPair(keyPair{cert: a.certPEM, key: keyPEM}, certPath, keyPath)
}

// clientCert issues a client certificate. Kubernetes takes the user name
// from CN and the groups from O.
func (a *authority) clientCert(user string, groups ...string) (keyPair, error) {
	return a.issue(pkix.Name{CommonName: user, Organization: groups}, x509.ExtKeyUsageClientAuth, nil, nil)
}

// servingCert issues a loopback serving certificate for the API server and
// the components' health endpoints.
func (a *authority) servingCert(name string) (keyPair, error) {
	ips := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	dns := []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"}
	return a.issue(pkix.Name{CommonName: name}, x509.ExtKeyUsageServerAuth, dns, ips)
}

func (a *authority) issue(subject pkix.Name, usage x509.ExtKeyUsage, dns []string, ips []net.IP) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("generate key for %q: %w", subject.CommonName, err)
	}
	tmpl, err := certTemplate(subject)
	if err != nil {
		return keyPair{}, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{usage}
	tmpl.DNSNames = dns
	tmpl.IPAddresses = ips
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, key.Public(), a.key)
	if err != nil {
		return keyPair{}, fmt.Errorf("sign certificate for %q: %w", subject.CommonName, err)
	}
	keyPEM, err := marshalKey(key)
	if err != nil {
		return keyPair{}, err
	}
	return keyPair{cert: pemBlock("CERTIFICATE", der), key: keyPEM}, nil
}

func certTemplate(subject pkix.Name) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generate serial number: %w", err)
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		// Backdated so that a slightly skewed clock does not reject it.
		NotBefore: now.Add(-time.Hour),
		NotAfter:  now.Add(certValidity),
	}, nil
}

// newServiceAccountKey returns the key pair the API server signs and verifies
// service-account tokens with, as private and public PEM.
func newServiceAccountKey() (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("generate service-account key: %w", err)
	}
	priv, err := marshalKey(key)
	if err != nil {
		return keyPair{}, err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return keyPair{}, fmt.Errorf("marshal service-account public key: %w", err)
	}
	// cert holds the public key here; keyPair is reused for its two PEMs.
	return keyPair{cert: pemBlock("PUBLIC KEY", pub), key: priv}, nil
}

func marshalKey(key crypto.Signer) ([]byte, error) {
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("unsupported key type %T", key)
	}
	der, err := x509.MarshalECPrivateKey(ec)
	if err != nil {
		return nil, fmt.Errorf("marshal key: %w", err)
	}
	return pemBlock("EC PRIVATE KEY", der), nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func readKeyPair(certPath, keyPath string) (keyPair, error) {
	cert, err := os.ReadFile(certPath)
	if err != nil {
		return keyPair{}, fmt.Errorf("read certificate: %w", err)
	}
	key, err := os.ReadFile(keyPath)
	if err != nil {
		return keyPair{}, fmt.Errorf("read key: %w", err)
	}
	return keyPair{cert: cert, key: key}, nil
}

func writeKeyPair(kp keyPair, certPath, keyPath string) error {
	if err := os.MkdirAll(filepath.Dir(certPath), 0o700); err != nil {
		return fmt.Errorf("create folder for %s: %w", certPath, err)
	}
	if err := os.WriteFile(certPath, kp.cert, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", certPath, err)
	}
	if err := os.WriteFile(keyPath, kp.key, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", keyPath, err)
	}
	return nil
}
