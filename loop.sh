#!/bin/bash
cd /work/explore
for i in $(seq 1 40); do
  LEASEHOLD_SCHEDULED_HISTORIES=2000 timeout 1800 npx vitest run test/scheduled/histories.test.ts test/scheduled/stalls.test.ts test/scheduled/holds.test.ts > /tmp/explore-c$i.log 2>&1
  echo "run $i rc $? $(date +%T)" >> /tmp/explore.status
done
