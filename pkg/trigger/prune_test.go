package trigger

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRetentionBlockIsParsedWithDefaultsAndClearErrors(t *testing.T) {
	const at = "ConfigMap kiln/kiln-config: data.retention"
	cases := []struct {
		name    string
		block   string // "" leaves the key out
		want    Retention
		wantErr string
	}{
		{name: "absent: keep 3, no schedule, dry run", want: Retention{KeepPerPool: 3}},
		{name: "every key", block: "keepPerPool: 5\nschedule: 24h\napply: true\n", want: Retention{KeepPerPool: 5, Schedule: 24 * time.Hour, Apply: true}},
		{name: "schedule off, unquoted (YAML reads false)", block: "schedule: off\n", want: Retention{KeepPerPool: 3}},
		{name: "schedule off, quoted", block: "schedule: \"off\"\nkeepPerPool: 0\n", want: Retention{}},
		{name: "a negative keep count", block: "keepPerPool: -1\n", wantErr: at + ".keepPerPool -1: want a whole number of images from 0 to 1000"},
		{name: "a fractional keep count", block: "keepPerPool: 2.5\n", wantErr: at + ".keepPerPool 2.5: want a whole number"},
		{name: "a schedule that is no duration", block: "schedule: daily\n", wantErr: at + ".schedule daily: want off or a Go duration of at least 10m0s, such as 24h"},
		{name: "a schedule too short", block: "schedule: 1m\n", wantErr: at + ".schedule 1m: want off or a Go duration of at least 10m0s"},
		{name: "apply as a string", block: "apply: \"yes\"\n", wantErr: at + ".apply yes: want true or false"},
		{name: "an unknown key", block: "keep: 3\n", wantErr: at + ".keep unknown key: want keepPerPool, schedule or apply"},
		{name: "not a map", block: "- 3\n", wantErr: at + ": want a map with keepPerPool, schedule and apply"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kiln", Name: ConfigName},
				Data: map[string]string{keyRepository: "registry.example.com/os-{pool}"}}
			if c.block != "" {
				cm.Data[keyRetention] = c.block
			}
			cfg, err := ParseConfig(cm)
			if c.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), c.wantErr) {
					t.Fatalf("ParseConfig = %v, want an error starting %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, cfg.Retention); d != "" {
				t.Errorf("retention (-want +got):\n%s", d)
			}
		})
	}
}
