// Package foreign holds end-to-end tests of the chronos binary on a real
// Apache Kafka broker (testenv/kafka/kafka.sh), run only with the build tag
// "foreign" and CHRONOS_TEST_BROKERS set:
//
//	testenv/kafka/kafka.sh start
//	CHRONOS_TEST_BROKERS=$(cat /tmp/chronos-kafka/brokers) go test -tags foreign -count=1 -v ./testenv/foreign/
//
// TestForeignPythonClient runs test_foreign.py, a confluent-kafka (librdkafka)
// client written only from docs/topics.md, against a `chronos run` subprocess.
// TestForeignNodeClient does the same with node/chronos.test.js, a kafkajs
// client with no compression plugin (npm packages from nodeenv.sh).
// TestRestartAfterKill9 kills `chronos run` with SIGKILL and checks that no
// scheduled second is lost. See docs/real-kafka.md.
package foreign
