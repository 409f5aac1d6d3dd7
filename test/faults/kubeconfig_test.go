package faults

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeKubeconfig writes a kubeconfig with one context (namespace ns) for
// server, trusting caPEM, with the given credentials.
func writeKubeconfig(t testing.TB, server string, caPEM []byte, user *clientcmdapi.AuthInfo, ns string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["u"] = user
	cfg.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: ns}
	cfg.CurrentContext = "ctx"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// adminAuth returns the admin credentials and the cluster CA of tc.
func (tc *testCluster) adminAuth(t testing.TB) (*clientcmdapi.AuthInfo, []byte) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(tc.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	return cfg.AuthInfos[ctx.AuthInfo], cfg.Clusters[ctx.Cluster].CertificateAuthorityData
}

// tokenKubeconfig is a kubeconfig for tc's server (or server, if given)
// that authenticates with a bearer token.
func (tc *testCluster) tokenKubeconfig(t testing.TB, token, ns string) string {
	t.Helper()
	_, ca := tc.adminAuth(t)
	return writeKubeconfig(t, tc.Cluster.Server, ca, &clientcmdapi.AuthInfo{Token: token}, ns)
}

func certPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// strangerCA is a fresh self-signed CA that signed nothing the cluster uses.
func strangerCA(t testing.TB) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "not-the-cluster-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM(der)
}
