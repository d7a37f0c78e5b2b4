package trigger

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

// Every way of recording an event escapes its message.
func TestSafeRecorderEscapesEventMessages(t *testing.T) {
	fake := record.NewFakeRecorder(3)
	r := SafeRecorder(fake)
	pool := &corev1.ConfigMap{}
	err := errors.New("denied \x1b[2J\a")
	r.Event(pool, corev1.EventTypeWarning, "Failed", err.Error())
	r.Eventf(pool, corev1.EventTypeWarning, "Failed", "pulling: %v", err)
	r.AnnotatedEventf(pool, map[string]string{"a": "b"}, corev1.EventTypeWarning, "Failed", "pulling %s: %v", "x\u202e", err)
	close(fake.Events)
	var got []string
	for e := range fake.Events {
		got = append(got, e)
	}
	want := []string{
		`Warning Failed denied \x1b[2J\a`,
		`Warning Failed pulling: denied \x1b[2J\a`,
		`Warning Failed pulling x\u202e: denied \x1b[2J\a map[a:b]`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
