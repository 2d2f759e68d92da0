package consumerlag

import (
	"context"
	"embed"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/pgsql"
)

// sqlFiles holds the package's statement.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

// RecentEvents is how many of the latest published and of the latest archived
// events OutboxTopics looks at.
const RecentEvents = 10000

// OutboxTopics returns a function that reads the topics the latest RecentEvents
// published events and the latest RecentEvents archived events of schema went to,
// plus extra (topics the operator named). A topic that has seen no event in that
// window (a quiet topic beside a busy one) is missed unless named in extra.
func OutboxTopics(pool *pgxpool.Pool, schema string, extra []string) func(context.Context) ([]string, error) {
	q := pgsql.Load(sqlFiles, "sql/recent_topics.sql", schema)
	return func(ctx context.Context) ([]string, error) {
		rows, err := pool.Query(ctx, q, RecentEvents)
		if err != nil {
			return nil, err
		}
		topics, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, err
		}
		for _, t := range extra {
			if !slices.Contains(topics, t) {
				topics = append(topics, t)
			}
		}
		slices.Sort(topics)
		return append([]string{}, topics...), nil
	}
}
