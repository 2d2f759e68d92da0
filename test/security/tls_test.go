package security

import (
	"context"
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
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/relay"
	"github.com/outboxtop/outboxtop/wire"
)

// ca is a throwaway certificate authority.
type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t *testing.T, name string) *ca {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &ca{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// serverCert issues a certificate for 127.0.0.1 and localhost.
func (c *ca) serverCert(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kafka"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func (c *ca) file(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(p, c.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestKafkaTLS: the relay publishes to a broker whose certificate a private CA
// signed when given that CA (--kafka-tls-ca), and refuses the broker, with an
// error that says why, when given another CA or none.
func TestKafkaTLS(t *testing.T) {
	t.Parallel()
	good := newCA(t, "outboxtop test CA")
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{good.serverCert(t)}, MinVersion: tls.VersionTLS12}))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	addrs := broker.ListenAddrs()

	t.Run("trusted CA", func(t *testing.T) {
		pool, _ := testenv.Pool(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := pool.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
			SELECT gen_random_uuid(), 'order', 'o-' || g, 'Placed', '{}' FROM generate_series(1, 20) g`); err != nil {
			t.Fatal(err)
		}
		client, err := relay.NewKafkaClient(relay.KafkaConfig{Brokers: addrs, TLS: true, TLSCAFile: good.file(t), AutoCreateTopics: true})
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		r, err := relay.New(pool, client, relay.Config{Drain: true, PollInterval: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Run(ctx); err != nil {
			t.Fatalf("relay over TLS: %v", err)
		}
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM outbox_event WHERE "+wire.PublishedSQL).Scan(&n); err != nil || n != 20 {
			t.Fatalf("published %d of 20 over TLS (%v)", n, err)
		}
		// And the records are there, read back over TLS.
		cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DialTLSConfig(&tls.Config{RootCAs: certPool(good), MinVersion: tls.VersionTLS12}),
			kgo.ConsumeTopics("outbox.order"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		got := 0
		for got < 20 && ctx.Err() == nil {
			got += cl.PollFetches(ctx).NumRecords()
		}
		if got != 20 {
			t.Errorf("read back %d records over TLS, want 20", got)
		}
	})

	for _, c := range []struct {
		name string
		cfg  relay.KafkaConfig
		want string
	}{
		{"another CA", relay.KafkaConfig{TLS: true, TLSCAFile: newCA(t, "some other CA").file(t)}, "certificate signed by unknown authority"},
		{"system roots only", relay.KafkaConfig{TLS: true}, "certificate signed by unknown authority"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Brokers = addrs
			client, err := relay.NewKafkaClient(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err = client.Ping(ctx)
			if err == nil {
				t.Fatal("connected to a broker whose certificate no trusted CA signed")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
		})
	}

	t.Run("CA file without a certificate", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "empty.pem")
		if err := os.WriteFile(p, []byte("not a certificate\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := relay.NewKafkaClient(relay.KafkaConfig{Brokers: addrs, TLSCAFile: p})
		if err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
			t.Errorf("want a clear refusal of an empty CA file, got %v", err)
		}
	})
}

func certPool(c *ca) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c.cert)
	return p
}
