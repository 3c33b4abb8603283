// Package autoscaling holds the slow autoscaling adversary tests of issue
// 19 (rounds 19d, 19f and 19g, fixed and run untagged), split out of
// package deploy so that each package stays well under go test's
// 10-minute default timeout: go test ./... runs the two packages side by
// side. Their helpers (the shipped ScaledObject, the slow and hanging
// dispatch producers, the gauge readers) are shared with deploy's tests
// through deploy/deploytest; the tagged tests of these rounds stay in
// deploy.
//
//	go test -count=1 -v ./deploy/autoscaling/
package autoscaling
