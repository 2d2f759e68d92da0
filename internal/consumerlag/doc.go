// Package consumerlag answers the on-call question the outbox table cannot: are
// the consumers keeping up, or is the backlog now downstream of Kafka?
//
// A Checker asks the brokers, never the consumers: it lists the consumer groups
// (kadm ListGroups), keeps those the operator named and drops those excluded,
// describes them (state, members, assignments; KIP-848 groups through
// ConsumerGroupDescribe), fetches their committed offsets, and lists the start
// and end offsets of the outbox's topics (kadm's CalculateGroupLag). A group's
// lag on a partition is end − committed (end − start on a partition assigned to
// it that it never committed); on a topic, the sum over its partitions. Only the outbox's topics count: a group that reads
// them and others is shown with the outbox's topics alone, and a group that reads
// none of them is not shown.
//
// The age of the oldest unconsumed record is read, not guessed: for every
// partition with lag, the record at the committed offset is fetched and its
// Kafka timestamp taken (producer time unless the topic uses LogAppendTime).
// Those reads are bounded by one timeout and a cap on partitions; a partition
// not read in time has no age, and a topic's age is the oldest of the ages read.
// They need Read on the topics; a refusal ends them at once and is reported
// apart from the lag (Report.AgeError), which does not depend on them.
//
// Nothing a broker refuses is fatal. A group that cannot be described or whose
// offsets cannot be fetched (an ACL, a coordinator moving) is reported with its
// error and the other groups are still measured; when groups cannot be listed at
// all the Report says so and holds no groups. Check never returns an error.
//
// Which topics are the outbox's is the caller's to say; OutboxTopics reads the
// topics recent published and archived events went to (a bounded read that uses
// the published_at and archived_at indexes, never a scan of the history).
//
// Cache throttles Check for readers that poll (the /metrics collector, the
// console): at most one check per interval, and at least 20 times as long apart
// as the last check took, so scraping /metrics every second does not become a
// stream of admin requests to the brokers. The collector never waits for a
// check: brokers that do not answer must not make the relay's own metrics miss
// their scrape, in the very outage they would show.
package consumerlag
