package trigger

import (
	"fmt"
	"math"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kiln-dev/kiln/pkg/retention"
)

// keyRetention is kiln-config's retention block (YAML): keepPerPool,
// schedule and apply, for the scheduled kiln-prune TaskRun.
const keyRetention = "retention"

// minPruneInterval keeps a schedule from hammering the registry: each
// prune lists and verifies every signed image of kiln's repositories.
const minPruneInterval = 10 * time.Minute

// Retention is kiln-config's retention block.
type Retention struct {
	// KeepPerPool is how many of each pool's most recent rendered configs'
	// images a prune keeps besides the current and desired ones.
	KeepPerPool int
	// Schedule is how often the trigger runs kiln-prune; 0 is off, the
	// default.
	Schedule time.Duration
	// Apply passes apply "true" to the prune (it deletes); false, the
	// default, makes it a dry run that prints the plan.
	Apply bool
}

// DefaultRetention is the retention block kiln-config does not set: no
// scheduled prune.
func DefaultRetention() Retention { return Retention{KeepPerPool: retention.DefaultPerPool} }

// parseRetention reads the retention block. where names the key for
// errors (ConfigMap ns/name: data.retention); every error adds the field.
func parseRetention(v string, where string) (Retention, error) {
	r := DefaultRetention()
	var raw map[string]any
	if err := yaml.Unmarshal([]byte(v), &raw); err != nil {
		return r, fmt.Errorf("%s: want a map with keepPerPool, schedule and apply: %w", where, err)
	}
	for _, k := range sortedKeys(raw) {
		field := where + "." + k
		var err error
		switch k {
		case "keepPerPool":
			r.KeepPerPool, err = parseKeep(raw[k])
		case "schedule":
			r.Schedule, err = parseSchedule(raw[k])
		case "apply":
			b, ok := raw[k].(bool)
			if !ok {
				err = fmt.Errorf("%v: want true or false", raw[k])
			}
			r.Apply = b
		default:
			err = fmt.Errorf("unknown key: want keepPerPool, schedule or apply")
		}
		if err != nil {
			return r, fmt.Errorf("%s %w", field, err)
		}
	}
	return r, nil
}

func parseKeep(v any) (int, error) {
	n, ok := v.(float64) // YAML numbers arrive as JSON numbers
	if !ok || n != math.Trunc(n) || n < 0 || n > 1000 {
		return 0, fmt.Errorf("%v: want a whole number of images from 0 to 1000", v)
	}
	return int(n), nil
}

// parseSchedule reads a Go duration such as 24h, or off. YAML 1.1 reads
// an unquoted off as false.
func parseSchedule(v any) (time.Duration, error) {
	switch s := v.(type) {
	case bool:
		if !s {
			return 0, nil
		}
	case string:
		if s == "off" {
			return 0, nil
		}
		d, err := time.ParseDuration(s)
		if err == nil && d >= minPruneInterval {
			return d, nil
		}
	}
	return 0, fmt.Errorf("%v: want off or a Go duration of at least %v, such as 24h", v, minPruneInterval)
}
