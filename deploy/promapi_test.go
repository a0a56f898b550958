package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// promSample is one element of an instant-query result.
type promSample struct {
	Labels map[string]string
	Value  float64
}

// promQuery runs an instant query against the Prometheus HTTP API at base;
// a zero at means "now". Scalars come back as one sample without labels.
func promQuery(ctx context.Context, base, expr string, at time.Time) ([]promSample, error) {
	form := url.Values{"query": {expr}}
	if !at.IsZero() {
		form.Set("time", strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64))
	}
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := promAPI(ctx, base, "/api/v1/query", form, &data); err != nil {
		return nil, fmt.Errorf("query %q: %w", expr, err)
	}
	switch data.ResultType {
	case "vector":
		var vec []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(data.Result, &vec); err != nil {
			return nil, err
		}
		out := make([]promSample, 0, len(vec))
		for _, s := range vec {
			v, err := sampleValue(s.Value)
			if err != nil {
				return nil, err
			}
			out = append(out, promSample{Labels: s.Metric, Value: v})
		}
		return out, nil
	case "scalar":
		var s [2]any
		if err := json.Unmarshal(data.Result, &s); err != nil {
			return nil, err
		}
		v, err := sampleValue(s)
		return []promSample{{Value: v}}, err
	default:
		return nil, fmt.Errorf("query %q: result type %q", expr, data.ResultType)
	}
}

func sampleValue(v [2]any) (float64, error) {
	s, ok := v[1].(string)
	if !ok {
		return 0, fmt.Errorf("sample value %v is not a string", v[1])
	}
	return strconv.ParseFloat(s, 64)
}

// promAPI calls an API path (GET without form, else POST of the form) and
// decodes the "data" of a success.
func promAPI(ctx context.Context, base, path string, form url.Values, data any) error {
	method, enc := http.MethodGet, ""
	if form != nil {
		method, enc = http.MethodPost, form.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(enc))
	if err != nil {
		return err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("%s: HTTP %s: %.200s", path, resp.Status, body)
	}
	if env.Status != "success" {
		return fmt.Errorf("%s: %s", path, env.Error)
	}
	return json.Unmarshal(env.Data, data)
}

// eventually calls check until it reports done, failing the test with the
// last reason when timeout passes. Waiting is not what is tested: the
// timeouts are generous and only bound a hung run.
func eventually(t *testing.T, timeout time.Duration, what string, check func(ctx context.Context) (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := "not checked yet"
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		done, why := check(ctx)
		cancel()
		if done {
			return
		}
		last = why
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v: %s", what, timeout, last)
		}
		time.Sleep(2 * time.Second)
	}
}

// scalarOf returns the single sample's value of a query expected to give
// one series (or none, reported as ok=false).
func scalarOf(ctx context.Context, base, expr string, at time.Time) (v float64, ok bool, err error) {
	res, err := promQuery(ctx, base, expr, at)
	if err != nil || len(res) == 0 {
		return 0, false, err
	}
	if len(res) > 1 {
		return 0, false, fmt.Errorf("query %q: %d series, want one", expr, len(res))
	}
	return res[0].Value, true, nil
}
