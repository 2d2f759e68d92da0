// Package security holds outboxtop's security tests (see SECURITY.md): the relay,
// console and operator run under exactly the grants 'outboxtop grants' prints,
// secrets stay out of output and logs, and Kafka TLS verifies the broker.
package security
