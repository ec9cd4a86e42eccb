package workspace

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// maxSearchResults is the largest web.search.maxResults.
const maxSearchResults = 50

// web checks the web section.
func (d *decoder) web(c *WebConfig) {
	for i, p := range c.AllowedDomains {
		path := fmt.Sprintf("web.allowedDomains[%d]", i)
		if d.bad[path] || d.badUnder("web.allowedDomains") {
			continue
		}
		if err := CheckDomainPattern(p); err != nil {
			d.fail(path, d.nodes[path], "%v", err)
		}
	}
	d.sizeUpTo("web.maxFetchSize", c.MaxFetchSize, gib)
	d.sizeUpTo("web.maxTextSize", c.MaxTextSize, gib)
	d.positiveAtMost("web.timeout", c.Timeout, 10*time.Minute)
	switch p := c.Search.Provider; {
	case d.bad["web.search.provider"] || p == "":
	case p != "searxng":
		d.fail("web.search.provider", d.nodes["web.search.provider"], "%q is not a known provider (searxng; or leave provider out for no web_search)", p)
	case !d.bad["web.search.url"]:
		if err := checkSearchURL(c.Search.URL); err != nil {
			d.fail("web.search.url", cmp.Or(d.nodes["web.search.url"], d.nodes["web.search.provider"]), "%v", err)
		}
	}
	d.atLeast("web.search.maxResults", c.Search.MaxResults, 1)
	if n := c.Search.MaxResults; n > maxSearchResults && !d.bad["web.search.maxResults"] {
		d.fail("web.search.maxResults", d.nodes["web.search.maxResults"], "%d is more than the limit of %d", n, maxSearchResults)
	}
}

func checkSearchURL(s string) error {
	if s == "" {
		return errors.New("must not be empty with a provider (the search endpoint, such as https://searx.example.org/search)")
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a URL: %v", s, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q is not an http or https URL", s)
	case u.Hostname() == "":
		return fmt.Errorf("%q names no host", s)
	case u.User != nil:
		return fmt.Errorf("%q carries a user name or password: web.search sends no credentials", s)
	}
	return nil
}

// CheckDomainPattern reports what is wrong with a web.allowedDomains
// entry: a host name ("go.dev"), "*." and a host name for every host under
// it ("*.python.org"), or an IP address; lower case, without a scheme,
// port or path.
func CheckDomainPattern(p string) error {
	host, wild := strings.CutPrefix(p, "*.")
	if _, err := netip.ParseAddr(host); err == nil {
		if wild {
			return fmt.Errorf("%q: an IP address takes no \"*.\"", p)
		}
		return nil
	}
	if host == "" || len(host) > 253 {
		return fmt.Errorf("%q is not a host name (such as go.dev, or *.python.org for every host under it)", p)
	}
	if last := host[strings.LastIndexByte(host, '.')+1:]; strings.Trim(last, "0123456789") == "" {
		return fmt.Errorf("%q is neither a host name nor an IP address", p)
	}
	for label := range strings.SplitSeq(host, ".") {
		if label == "" || len(label) > 63 || strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") {
			return fmt.Errorf("%q is not a host name (such as go.dev, or *.python.org for every host under it)", p)
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return fmt.Errorf("%q is not a lower-case host name without scheme, port or path (such as go.dev, or *.python.org)", p)
			}
		}
	}
	return nil
}

// ASCIIHost is a URL's host name in lower case, without a trailing dot,
// and in its ASCII form (xn--…, as it is dialled) when it has letters
// outside ASCII; changed says it had. It is "" when the name has no ASCII
// form.
func ASCIIHost(host string) (ascii string, changed bool) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for i := 0; i < len(host); i++ {
		if host[i] >= utf8.RuneSelf {
			a, err := idna.Lookup.ToASCII(host)
			if err != nil {
				return "", true
			}
			return a, true
		}
	}
	return host, false
}

// DomainAllowed returns the first of patterns (web.allowedDomains) that
// allows host, and whether one does. host is compared as [ASCIIHost] gives
// it; "*.example.org" covers a.example.org and a.b.example.org but not
// example.org. An IPv6 address is written without brackets.
func DomainAllowed(patterns []string, host string) (string, bool) {
	host, _ = ASCIIHost(host)
	if strings.HasPrefix(host, "*.") || CheckDomainPattern(host) != nil {
		return "", false // not a host a pattern names
	}
	if a, err := netip.ParseAddr(host); err == nil {
		host = a.Unmap().String()
	}
	for _, p := range patterns {
		if rest, wild := strings.CutPrefix(p, "*."); wild {
			if strings.HasSuffix(host, "."+rest) {
				return p, true
			}
			continue
		}
		if a, err := netip.ParseAddr(p); err == nil {
			if a.Unmap().String() == host {
				return p, true
			}
			continue
		}
		if p == host {
			return p, true
		}
	}
	return "", false
}
