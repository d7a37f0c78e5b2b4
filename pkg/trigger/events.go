package trigger

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	"github.com/kiln-dev/kiln/pkg/termsafe"
)

// safeRecorder escapes every event message (termsafe): messages carry
// text from outside (an error from a registry or the apiserver, object
// names), and `kubectl describe` and `kubectl get events` print them on a
// terminal. One wrapper at the recorder covers every call site.
type safeRecorder struct{ r record.EventRecorder }

// SafeRecorder wraps r so that every message it records is escaped.
func SafeRecorder(r record.EventRecorder) record.EventRecorder { return safeRecorder{r: r} }

func (s safeRecorder) Event(obj runtime.Object, eventtype, reason, message string) {
	s.r.Event(obj, eventtype, reason, termsafe.Escape(message))
}

func (s safeRecorder) Eventf(obj runtime.Object, eventtype, reason, format string, args ...any) {
	s.r.Event(obj, eventtype, reason, termsafe.Escape(fmt.Sprintf(format, args...)))
}

func (s safeRecorder) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventtype, reason, format string, args ...any) {
	s.r.AnnotatedEventf(obj, annotations, eventtype, reason, "%s", termsafe.Escape(fmt.Sprintf(format, args...)))
}
