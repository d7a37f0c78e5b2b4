package registry

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/kiln-dev/kiln/pkg/termsafe"
)

// debugLog receives one line per registry request when set (the
// binaries' --verbose). go-containerregistry's own logs.Debug dumps whole
// requests and responses; kiln prints less on purpose: the method, the
// URL without its query (a blob redirect's query is a signed credential)
// and without user information, the status and the time taken. Headers
// and bodies, where tokens live, are never printed.
var debugLog struct {
	sync.Mutex
	w io.Writer
}

// SetDebugOutput makes every registry request print one line to w; nil
// turns it off.
func SetDebugOutput(w io.Writer) {
	debugLog.Lock()
	defer debugLog.Unlock()
	debugLog.w = w
}

func debugOutput() io.Writer {
	debugLog.Lock()
	defer debugLog.Unlock()
	return debugLog.w
}

// debugTransport wraps next with the request log when one is set.
func debugTransport(next http.RoundTripper) http.RoundTripper {
	if debugOutput() == nil {
		return next
	}
	return &logTransport{next: next, now: time.Now}
}

type logTransport struct {
	next http.RoundTripper
	now  func() time.Time
}

func (t *logTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := t.now()
	resp, err := t.next.RoundTrip(req)
	took := t.now().Sub(start).Round(time.Millisecond)
	outcome := ""
	if err != nil {
		// url.Error repeats the URL, query included.
		var ue *url.Error
		if errors.As(err, &ue) {
			outcome = "error: " + ue.Err.Error()
		} else {
			outcome = "error: " + err.Error()
		}
	} else {
		outcome = resp.Status
	}
	u := *req.URL
	u.RawQuery, u.ForceQuery, u.User, u.Fragment = "", false, nil, ""
	line := termsafe.Escape(fmt.Sprintf("registry: %s %s: %s (%s)", req.Method, u.String(), outcome, took))
	if w := debugOutput(); w != nil {
		debugLog.Lock()
		fmt.Fprintln(w, line)
		debugLog.Unlock()
	}
	return resp, err
}
