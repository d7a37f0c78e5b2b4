package rollout

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// TestWatchEnded: a closed watch and a 410 relist; another error event
// fails the wait naming what was watched; an object event goes on.
func TestWatchEnded(t *testing.T) {
	status := func(err *apierrors.StatusError) watch.Event {
		return watch.Event{Type: watch.Error, Object: &err.ErrStatus}
	}
	gr := schema.GroupResource{Group: "machineconfiguration.openshift.io", Resource: "machineconfignodes"}
	for _, tc := range []struct {
		name       string
		ev         watch.Event
		closed     bool
		wantRelist bool
		wantErr    string
	}{
		{name: "closed channel", closed: true, wantRelist: true},
		{name: "410 Expired", ev: status(apierrors.NewResourceExpired("too old resource version: 5 (9)")), wantRelist: true},
		{name: "410 Gone", ev: status(apierrors.NewGone("gone")), wantRelist: true},
		{name: "403 fails", ev: status(apierrors.NewForbidden(gr, "", errors.New("RBAC denied"))),
			wantErr: `watching MachineConfigNodes: machineconfignodes.machineconfiguration.openshift.io is forbidden: RBAC denied`},
		{name: "an object", ev: watch.Event{Type: watch.Modified}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			relist, err := watchEnded(tc.ev, !tc.closed, "MachineConfigNodes")
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if relist != tc.wantRelist || gotErr != tc.wantErr {
				t.Errorf("watchEnded = %v, %q; want %v, %q", relist, gotErr, tc.wantRelist, tc.wantErr)
			}
		})
	}
}
