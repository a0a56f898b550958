// Command healthcheck is the container health check of the adapter's image:
// it GETs one URL and exits 0 on a 2xx answer, 1 otherwise. The runtime image
// has no shell, curl or wget, so the check is a static binary of its own.
//
// It knows nothing of the adapter beyond the URL it is given.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	timeout := flag.Duration("timeout", 5*time.Second, "time allowed for the whole request")
	insecure := flag.Bool("insecure-skip-verify", false, "accept any TLS certificate (a self-signed --web.config.file certificate)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s [flags] [url]  (default url http://127.0.0.1:9201/-/healthy)\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	url := "http://127.0.0.1:9201/-/healthy"
	if flag.NArg() > 0 {
		url = flag.Arg(0)
	}
	if err := check(url, *timeout, *insecure); err != nil {
		fmt.Fprintln(os.Stderr, "unhealthy:", err)
		os.Exit(1)
	}
}

func check(url string, timeout time.Duration, insecure bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if insecure {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // asked for by flag, for self-signed local certificates
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s answered %s: %s", url, resp.Status, body)
	}
	return nil
}
