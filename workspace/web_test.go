package workspace

import "testing"

func TestDomainAllowed(t *testing.T) {
	patterns := []string{"go.dev", "*.python.org", "10.0.0.1", "::1", "xn--g-1tb.dev"}
	for host, want := range map[string]string{
		"go.dev":           "go.dev",
		"GO.DEV.":          "go.dev",
		"www.go.dev":       "",
		"notgo.dev":        "",
		"docs.python.org":  "*.python.org",
		"a.b.python.org":   "*.python.org",
		"python.org":       "",
		"evilpython.org":   "",
		"10.0.0.1":         "10.0.0.1",
		"::ffff:10.0.0.1":  "10.0.0.1",
		"::1":              "::1",
		"g\u043e.dev":      "xn--g-1tb.dev", // matched as it is dialled
		"":                 "",
		"*.python.org":     "",
		"go.dev.evil.test": "",
	} {
		got, ok := DomainAllowed(patterns, host)
		if got != want || ok != (want != "") {
			t.Errorf("DomainAllowed(%q) = %q %v, want %q", host, got, ok, want)
		}
	}
}

func TestCheckDomainPattern(t *testing.T) {
	for p, ok := range map[string]bool{
		"go.dev": true, "*.python.org": true, "localhost": true, "10.0.0.1": true, "fe80::1": true, "my_host.lan": true,
		"": false, "*": false, "*.": false, "https://go.dev": false, "go.dev:443": false, "go.dev/x": false, "Go.dev": false,
		"*.10.0.0.1": false, "5": false, "1.2.3": false, "-a.dev": false, "a..dev": false, "g\u043e.dev": false,
	} {
		if err := CheckDomainPattern(p); (err == nil) != ok {
			t.Errorf("CheckDomainPattern(%q) = %v, want ok %v", p, err, ok)
		}
	}
}
