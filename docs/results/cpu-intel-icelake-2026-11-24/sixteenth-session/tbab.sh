#!/bin/bash
# Ad-hoc (docs only, ab.txt item 5): two trainbench binaries (/tmp/s16/tb_old, /tmp/s16/tb_new) alternating.
# tbab.sh O THREADS ROUNDS: old and new trainbench alternating, median samples/s of each run (3 reps)
o=$1; th=$2; rounds=$3
for r in $(seq 1 $rounds); do
  for which in old new; do
    if [ $((r % 2)) = 0 ]; then w=$which; else [ $which = old ] && w=new || w=old; fi
    rm -f /tmp/s16/ab_$w.csv
    TB_CEILINGS=0 /tmp/s16/tb_$w run --model linear --layers 1024,$o --samples 60000 --batch 4096 --epochs 2 --reps 3 \
      --backend cpu-omp --threads $th --out /tmp/s16/ab_$w.csv >/dev/null 2>&1
    v=$(/usr/bin/python3 -c "import csv,statistics;r=list(csv.DictReader(open('/tmp/s16/ab_$w.csv')));print(statistics.median(float(x['samples_per_s']) for x in r if x['status']=='ok'))")
    echo "$r $w $v"
  done
done | /usr/bin/python3 -c "
import sys,statistics
d={}
rows=[l.split() for l in sys.stdin]
by={}
for r,w,v in rows: by.setdefault(r,{})[w]=float(v)
ratios=[by[r]['new']/by[r]['old'] for r in by]
old=[by[r]['old'] for r in by]; new=[by[r]['new'] for r in by]
print(f'O=$o threads=$th: old {statistics.median(old):,.0f} new {statistics.median(new):,.0f} samples/s; new/old per round median {statistics.median(ratios):.3f} [{min(ratios):.3f}-{max(ratios):.3f}] ({len(ratios)} rounds)')
"
