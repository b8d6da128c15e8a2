package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the cluster's certificate authority and the files every component reads: the serving
// certificate of the API server, client certificates for the administrator and the control-plane
// components, and the service-account signing key.
type pki struct {
	dir    string
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	serial int64 // the last serial number issued
	CAFile string
	// The API server's serving pair (127.0.0.1, localhost and the in-cluster names).
	ServingCert, ServingKey string
	// The service-account token signing key (private) and its public half.
	ServiceAccountKey, ServiceAccountPub string
}

func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "numadra-e2e-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(48 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	p := &pki{dir: dir, ca: ca, caKey: key, serial: 1, CAFile: filepath.Join(dir, "ca.crt")}
	if err := writePEM(p.CAFile, "CERTIFICATE", der); err != nil {
		return nil, err
	}
	p.ServingCert, p.ServingKey, err = p.issue("apiserver", pkix.Name{CommonName: "kube-apiserver"},
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		[]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")}, x509.ExtKeyUsageServerAuth)
	if err != nil {
		return nil, err
	}
	if err := p.serviceAccountKeys(); err != nil {
		return nil, err
	}
	return p, nil
}

// Client issues a client certificate for the user `name` in `groups`.
func (p *pki) Client(name string, groups ...string) (certFile, keyFile string, err error) {
	return p.issue("client-"+name, pkix.Name{CommonName: name, Organization: groups}, nil, nil,
		x509.ExtKeyUsageClientAuth)
}

func (p *pki) issue(file string, subject pkix.Name, names []string, ips []net.IP, usage x509.ExtKeyUsage) (string, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	p.serial++
	template := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(48 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     names,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		return "", "", fmt.Errorf("issuing %s: %w", file, err)
	}
	certFile := filepath.Join(p.dir, file+".crt")
	keyFile := filepath.Join(p.dir, file+".key")
	if err := writePEM(certFile, "CERTIFICATE", der); err != nil {
		return "", "", err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	return certFile, keyFile, writePEM(keyFile, "EC PRIVATE KEY", keyDER)
}

func (p *pki) serviceAccountKeys() error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	private, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	public, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	p.ServiceAccountKey = filepath.Join(p.dir, "sa.key")
	p.ServiceAccountPub = filepath.Join(p.dir, "sa.pub")
	if err := writePEM(p.ServiceAccountKey, "EC PRIVATE KEY", private); err != nil {
		return err
	}
	return writePEM(p.ServiceAccountPub, "PUBLIC KEY", public)
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}
