# SAS Grid on ANF (seed 003): the master line adds -hard,rw; the key holds an escaped blank
sas\ data  -fstype=nfs,rsize=65536,wsize=65536,vers=3,noatime,nodiratime,rdirplus,acdirmin=0,tcp,nconnect=8  10.0.2.4:/sasdata
