// kinesalite-server.js starts kinesalite on 127.0.0.1 only (its CLI binds
// every interface), surviving clients that abort requests (survive-aborts.js).
// Usage: node scripts/kinesalite-server.js PORT
'use strict'
require('./survive-aborts')('kinesalite')
const port = Number(process.argv[2])
if (!Number.isInteger(port) || port <= 0) {
  console.error('usage: kinesalite-server.js PORT')
  process.exit(2)
}
const server = require('kinesalite')({
  createStreamMs: 0,
  deleteStreamMs: 0,
  updateStreamMs: 0,
  shardLimit: 1000,
})
server.on('error', (err) => {
  console.error('kinesalite: ' + err.message)
  process.exit(1)
})
server.listen(port, '127.0.0.1', () => {
  console.log('kinesalite listening at http://127.0.0.1:' + port)
})
process.on('SIGTERM', () => process.exit(0))
