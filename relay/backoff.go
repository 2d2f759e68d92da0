package relay

import (
	"math/rand/v2"
	"time"
)

// backoff is how long an event that failed its attempts-th attempt waits: base ×
// 2^(attempts-1), capped at max, with "equal jitter" (half fixed, half random) so
// events that failed together do not all return together.
func backoff(attempts int, base, max time.Duration) time.Duration {
	d := base
	for i := 1; i < attempts && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(half)+1))
}
