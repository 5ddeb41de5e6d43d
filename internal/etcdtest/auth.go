package etcdtest

import (
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// User is an etcd user for EnableAuth: granted reading and writing the
// keys under Prefix, or nothing when Prefix is empty.
type User struct {
	Name, Password, Prefix string
}

// EnableAuth adds a root user with rootPassword and users to the cluster,
// then turns on its authentication: from then on every client must log in.
// Use it on a cluster of the test's own (NewCluster), never the shared one.
func (c *Cluster) EnableAuth(t testing.TB, rootPassword string, users ...User) {
	t.Helper()
	cli := c.Client(t)
	ctx := Context(t)
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("etcdtest: %s: %v", what, err)
		}
	}
	_, err := cli.RoleAdd(ctx, "root")
	must("add role root", err)
	_, err = cli.UserAdd(ctx, "root", rootPassword)
	must("add user root", err)
	_, err = cli.UserGrantRole(ctx, "root", "root")
	must("grant root", err)
	for _, u := range users {
		_, err = cli.UserAdd(ctx, u.Name, u.Password)
		must("add user "+u.Name, err)
		if u.Prefix == "" {
			continue
		}
		role := "rw-" + u.Name
		_, err = cli.RoleAdd(ctx, role)
		must("add role "+role, err)
		_, err = cli.RoleGrantPermission(ctx, role, u.Prefix, clientv3.GetPrefixRangeEnd(u.Prefix), clientv3.PermissionType(clientv3.PermReadWrite))
		must("grant "+role+" on "+u.Prefix, err)
		_, err = cli.UserGrantRole(ctx, u.Name, role)
		must("grant "+role+" to "+u.Name, err)
	}
	_, err = cli.AuthEnable(ctx)
	must("enable authentication", err)
}
