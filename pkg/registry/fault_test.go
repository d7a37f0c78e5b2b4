package registry

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/kiln-dev/kiln/pkg/exitcode"
)

// A registry's HTTP error is a fault for exitcode.IsFault (exit 1, never a
// refusal) exactly when its status carries no answer about the image,
// however it is wrapped.
func TestTransportErrorsAreFaultsByStatus(t *testing.T) {
	got := map[string]bool{}
	for _, code := range []int{400, 401, 403, 404, 408, 429, 500, 502, 503} {
		got[fmt.Sprint(code)] = exitcode.IsFault(fmt.Errorf("reading x: %w", &transport.Error{StatusCode: code}))
	}
	want := map[string]bool{"400": false, "401": true, "403": true, "404": true, "408": true, "429": true, "500": true, "502": true, "503": true}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("IsFault by status (-want +got):\n%s", d)
	}
	if code := exitcode.CodeOf(exitcode.Refused(&transport.Error{StatusCode: 502})); code != exitcode.ExitFailure {
		t.Errorf("a refusal wrapping a 502 exits %d, want %d", code, exitcode.ExitFailure)
	}
}
