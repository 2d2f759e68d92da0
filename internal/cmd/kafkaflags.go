package cmd

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/relay"
)

// kafkaClientFor makes clients with k's settings plus the caller's options: trace
// and the console's detail read records back with it.
func kafkaClientFor(k relay.KafkaConfig) inspect.KafkaClient {
	return func(opts ...kgo.Opt) (*kgo.Client, error) {
		c := k
		c.Extra = append(append([]kgo.Opt(nil), k.Extra...), opts...)
		return relay.NewKafkaClient(c)
	}
}
