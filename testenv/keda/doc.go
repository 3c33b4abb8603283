// Package keda holds the parity test of Chronos's lag against KEDA's own
// Kafka scaler (github.com/kedacore/keda/v2, the version go.mod requires;
// the manifests and the Helm chart name the same one). It is its own Go
// module so that KEDA's dependencies stay out of the main module's go.sum;
// building them takes about 6 minutes cold (.ci/run caches the module and
// build caches under ~/.cache/chronos-keda).
//
// Run it from this directory: go test -count=1 . (with CHRONOS_TEST_BROKERS
// set, on Apache Kafka).
package keda
