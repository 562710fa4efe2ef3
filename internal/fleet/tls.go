package fleet

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/runner-manager/runner-manager/config"
)

// tlsConfig is nil for plain http endpoints without TLS files.
func tlsConfig(c config.Fleet) (*tls.Config, error) {
	if c.EtcdCAFile == "" && c.EtcdCertFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.EtcdCAFile != "" {
		pem, err := os.ReadFile(c.EtcdCAFile)
		if err != nil {
			return nil, fmt.Errorf("fleet.etcd_ca_file: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("fleet.etcd_ca_file %s holds no PEM certificate", c.EtcdCAFile)
		}
	}
	if c.EtcdCertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.EtcdCertFile, c.EtcdKeyFile)
		if err != nil {
			return nil, fmt.Errorf("fleet.etcd_cert_file/etcd_key_file: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
