package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"golang.org/x/crypto/bcrypt"

	"github.com/prom-hbase/prom-hbase/hbase/hbasetest"
)

var adapterBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "adapter-test")
	if err != nil {
		panic(err)
	}
	adapterBin = filepath.Join(dir, "adapter")
	if out, err := exec.Command("go", "build", "-o", adapterBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the adapter: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

type adapter struct {
	cmd  *exec.Cmd
	addr string
	logs *bytes.Buffer
}

// startAdapter runs the binary on a free loopback port and waits until it
// answers /-/healthy (ready is checked by the callers that need it).
func startAdapter(t *testing.T, client *http.Client, scheme string, args ...string) *adapter {
	t.Helper()
	a := &adapter{addr: freePort(t), logs: &bytes.Buffer{}}
	a.cmd = exec.Command(adapterBin, append([]string{"--web.listen-address=" + a.addr, "--log.level=debug"}, args...)...)
	a.cmd.Stdout, a.cmd.Stderr = a.logs, a.logs
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if a.cmd.ProcessState == nil {
			_ = a.cmd.Process.Kill()
			_ = a.cmd.Wait()
		}
		if t.Failed() {
			t.Logf("adapter logs:\n%s", a.logs)
		}
	})
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := client.Get(scheme + "://" + a.addr + "/-/healthy")
		if err == nil {
			resp.Body.Close()
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("adapter did not come up: %v\n%s", err, a.logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop sends SIGTERM and expects a clean exit.
func (a *adapter) stop(t *testing.T) {
	t.Helper()
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("adapter exited with %v\n%s", err, a.logs)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("adapter did not stop on SIGTERM\n%s", a.logs)
	}
}

func writeBody(t *testing.T, ts int64) ([]byte, []prompb.TimeSeries) {
	t.Helper()
	var series []prompb.TimeSeries
	for i := range 5 {
		s := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "adapter_test"}, {Name: "i", Value: fmt.Sprint(i)}}}
		for j := range 10 {
			v := float64(i*10 + j)
			if j == 9 {
				v = math.Float64frombits(0x7ff0000000000002) // staleness marker
			}
			s.Samples = append(s.Samples, prompb.Sample{Timestamp: ts + int64(j)*1000, Value: v})
		}
		series = append(series, s)
	}
	b, err := (&prompb.WriteRequest{Timeseries: series}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return snappy.Encode(nil, b), series
}

func promURL(t *testing.T, s string) *config_util.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return &config_util.URL{URL: u}
}

// readBack reads adapter_test through Prometheus's streamed read client and
// compares with want bit for bit.
func readBack(t *testing.T, base string, ts int64, want []prompb.TimeSeries) {
	t.Helper()
	c, err := remote.NewReadClient("t", &remote.ClientConfig{URL: promURL(t, base+"/api/v1/read"), Timeout: model.Duration(30 * time.Second), ChunkedReadLimit: 1 << 20,
		AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS}})
	if err != nil {
		t.Fatal(err)
	}
	q, err := remote.ToQuery(ts, ts+3_599_999, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "adapter_test")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := c.Read(context.Background(), q, true)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	var it chunkenc.Iterator
	for ss.Next() {
		if i >= len(want) {
			t.Fatalf("more series than written: %s", ss.At().Labels())
		}
		var sb labels.ScratchBuilder
		if got, w := ss.At().Labels(), want[i].ToLabels(&sb, nil); !labels.Equal(got, w) {
			t.Fatalf("series %d: %s, want %s", i, got, w)
		}
		it = ss.At().Iterator(it)
		j := 0
		for it.Next() == chunkenc.ValFloat {
			if j >= len(want[i].Samples) {
				t.Fatalf("series %d: more samples than written", i)
			}
			tt, v := it.At()
			if w := want[i].Samples[j]; tt != w.Timestamp || math.Float64bits(v) != math.Float64bits(w.Value) {
				t.Fatalf("series %d sample %d: (%d,%x) want (%d,%x)", i, j, tt, math.Float64bits(v), w.Timestamp, math.Float64bits(w.Value))
			}
			j++
		}
		if j != len(want[i].Samples) {
			t.Fatalf("series %d: %d samples, want %d", i, j, len(want[i].Samples))
		}
		i++
	}
	if ss.Err() != nil || i != len(want) {
		t.Fatalf("%d series read, want %d; err %v", i, len(want), ss.Err())
	}
}

func postWrite(client *http.Client, u, user, pass string, body []byte) (int, string, error) {
	req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "snappy")
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func waitReady(t *testing.T, client *http.Client, base string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := client.Get(base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("adapter never became ready")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRestart writes, stops the adapter with SIGTERM, starts it again on the
// same directory and reads everything back.
func TestRestart(t *testing.T) {
	dir := t.TempDir()
	client := &http.Client{Timeout: 30 * time.Second}
	const ts = int64(1_750_000_000_000)
	body, series := writeBody(t, ts)

	a := startAdapter(t, client, "http", "--storage.path="+dir)
	base := "http://" + a.addr
	waitReady(t, client, base)
	if code, msg, err := postWrite(client, base+"/api/v1/write", "", "", body); err != nil || code != 204 {
		t.Fatalf("write: %d %q %v", code, msg, err)
	}
	readBack(t, base, ts, series)
	resp, err := client.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"promhbase_remote_write_samples_written_total 50", "go_goroutines", `promhbase_http_request_duration_seconds_count{code="204",endpoint="write"} 1`} {
		if !strings.Contains(string(m), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	a.stop(t)

	b := startAdapter(t, client, "http", "--storage.path="+dir)
	base = "http://" + b.addr
	waitReady(t, client, base)
	readBack(t, base, ts, series)
	b.stop(t)
}

// TestTLSAndBasicAuth configures --web.config.file with a self-signed
// certificate and a user.
func TestTLSAndBasicAuth(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM, pool := selfSigned(t)
	if err := os.WriteFile(filepath.Join(dir, "cert.pem"), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "key.pem"), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webCfg := fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  prom: %s\n",
		filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), hash)
	if err := os.WriteFile(filepath.Join(dir, "web.yml"), []byte(webCfg), 0o600); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	a := startAdapter(t, client, "https", "--storage.path="+filepath.Join(dir, "data"), "--web.config.file="+filepath.Join(dir, "web.yml"))
	base := "https://" + a.addr
	body, series := writeBody(t, 1_750_000_000_000)

	code, _, err := postWrite(client, base+"/api/v1/write", "", "", body)
	if err != nil || code != http.StatusUnauthorized {
		t.Fatalf("without credentials: %d %v, want 401", code, err)
	}
	code, _, err = postWrite(client, base+"/api/v1/write", "prom", "wrong", body)
	if err != nil || code != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d %v, want 401", code, err)
	}
	code, _, err = postWrite(&http.Client{Timeout: 10 * time.Second}, "http://"+a.addr+"/api/v1/write", "prom", "s3cret", body)
	if err == nil && code < 400 {
		t.Fatalf("plain HTTP accepted: %d", code)
	}
	code, msg, err := postWrite(client, base+"/api/v1/write", "prom", "s3cret", body)
	if err != nil || code != 204 {
		t.Fatalf("with credentials: %d %q %v", code, msg, err)
	}

	// Prometheus's own client with basic auth and the CA reads it back.
	c, err := remote.NewReadClient("t", &remote.ClientConfig{
		URL: promURL(t, base+"/api/v1/read"), Timeout: model.Duration(30 * time.Second), ChunkedReadLimit: 1 << 20,
		HTTPClientConfig: config_util.HTTPClientConfig{
			BasicAuth: &config_util.BasicAuth{Username: "prom", Password: "s3cret"},
			TLSConfig: config_util.TLSConfig{CAFile: filepath.Join(dir, "cert.pem")},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := remote.ToQuery(0, math.MaxInt64/2, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "adapter_test")}, nil)
	ss, err := c.Read(context.Background(), q, true)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ss.Next() {
		n++
	}
	if ss.Err() != nil || n != len(series) {
		t.Fatalf("read %d series, err %v", n, ss.Err())
	}
	a.stop(t)
}

func selfSigned(t *testing.T) (certPEM, keyPEM []byte, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), pool
}

// TestHBaseOutage: while HBase is down, writes get 503 within the write
// timeout (plus a margin); once it is back, they succeed again.
func TestHBaseOutage(t *testing.T) {
	zk := hbasetest.ZK(t)
	runDir := hbasetest.RunDir(t)
	script, err := filepath.Abs("../../scripts/hbase.sh")
	if err != nil {
		t.Fatal(err)
	}
	hbase := func(action string) {
		cmd := exec.Command(script, action)
		cmd.Env = append(os.Environ(), "HBASE_RUN_DIR="+runDir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("hbase.sh %s: %v\n%s", action, err, out)
		}
	}
	client := &http.Client{Timeout: 60 * time.Second}
	const writeTimeout = 5 * time.Second
	a := startAdapter(t, client, "http", "--hbase.zookeeper-quorum="+zk, "--hbase.zookeeper-root="+hbasetest.ZKRoot(),
		"--hbase.table-prefix=outage_", "--write.timeout="+writeTimeout.String(), "--hbase.rpc-timeout=2s")
	base := "http://" + a.addr
	waitReady(t, client, base)
	const ts = int64(1_750_000_000_000)
	body, series := writeBody(t, ts)
	if code, msg, err := postWrite(client, base+"/api/v1/write", "", "", body); err != nil || code != 204 {
		t.Fatalf("write with HBase up: %d %q %v", code, msg, err)
	}

	hbase("stop")
	resumed := false
	defer func() {
		if !resumed {
			hbase("resume")
		}
	}()
	body2, _ := writeBody(t, ts+3_600_000)
	start := time.Now()
	code, msg, err := postWrite(client, base+"/api/v1/write", "", "", body2)
	took := time.Since(start)
	if err != nil || code != http.StatusServiceUnavailable {
		t.Fatalf("write with HBase down: %d %q %v, want 503", code, msg, err)
	}
	if took > writeTimeout+5*time.Second {
		t.Fatalf("503 took %v, write timeout is %v", took, writeTimeout)
	}
	t.Logf("HBase down: 503 after %v: %s", took, strings.TrimSpace(msg))

	hbase("resume")
	resumed = true
	deadline := time.Now().Add(4 * time.Minute)
	for {
		code, msg, err = postWrite(client, base+"/api/v1/write", "", "", body2)
		if err == nil && code == 204 {
			break
		}
		if err == nil && code != http.StatusServiceUnavailable {
			t.Fatalf("write after resume: %d %q", code, msg)
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes still fail 4 minutes after HBase resumed: %d %q %v", code, msg, err)
		}
		time.Sleep(2 * time.Second)
	}
	readBack(t, base, ts, series)
	a.stop(t)
}
