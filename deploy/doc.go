// Package deploy holds deployment manifests; its tests check them against the code.
// The Helm chart's tests (helm_test.go) need a helm binary and run with the build
// tag "helm" (go test -tags helm ./deploy/; see docs/deploy.md, "Helm chart").
// The slow autoscaling adversary tests of rounds 19d, 19f and 19g are in
// deploy/autoscaling, a package of their own so that go test runs them beside
// these; the helpers both use are in deploy/deploytest.
package deploy
