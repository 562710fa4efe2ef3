package runnerproto

import (
	"encoding/base64"
	"strings"
	"testing"
)

func TestJITConfigRoundTrip(t *testing.T) {
	in := JITConfig{URL: "http://127.0.0.1:1", RunnerID: 7, RunnerName: "r", Credential: "ghsimrunner_secret", Labels: []string{"linux"}}
	enc, err := in.Encode()
	if err != nil {
		t.Fatal(err)
	}
	out, err := Decode(enc)
	if err != nil || out.RunnerID != 7 || out.Credential != in.Credential || out.Labels[0] != "linux" {
		t.Fatalf("round trip = %+v, %v", out, err)
	}
}

func TestDecodeErrorsNeverQuoteTheConfig(t *testing.T) {
	secret := "ghsimrunner_topsecret"
	for name, in := range map[string]string{
		"not-base64":  "!!" + secret,
		"not-json":    base64.StdEncoding.EncodeToString([]byte("{" + secret)),
		"missing-url": base64.StdEncoding.EncodeToString([]byte(`{"runner_id":1,"credential":"` + secret + `"}`)),
	} {
		_, err := Decode(in)
		if err == nil {
			t.Fatalf("%s: decoded", name)
		}
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("%s: error leaks the credential: %v", name, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	enc, _ := JITConfig{URL: "http://x", RunnerID: 1, Credential: "c"}.Encode()
	f.Add(enc)
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Decode(s)
		if err == nil && (c.URL == "" || c.RunnerID == 0 || c.Credential == "") {
			t.Fatalf("accepted an incomplete config %+v", c)
		}
	})
}
