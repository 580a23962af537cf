S Nowadays , technology is developing very fast .

S Many people believes that mobile phones make our life more easy .
A 2 3|||SVA|||believe|||REQUIRED|||-NONE-|||0
A 9 11|||Wform|||easier|||REQUIRED|||-NONE-|||0
A 2 3|||SVA|||believe|||REQUIRED|||-NONE-|||1
A 9 11|||Wform|||easier|||REQUIRED|||-NONE-|||1

S However , there are also some disadvantage we should consider .
A -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||0
A 6 7|||Nn|||disadvantages|||REQUIRED|||-NONE-|||1

S For example , children spend too much time on game .
A 9 10|||Nn|||games|||REQUIRED|||-NONE-|||0

S In my opinion , the government should to protect the environment .
A 6 8|||Vm|||should|||REQUIRED|||-NONE-|||0
A 6 8|||Vm|||should|||REQUIRED|||-NONE-|||1

S Every year , a lot of tree are cut down .
A 6 7|||Nn|||trees|||REQUIRED|||-NONE-|||0
A 6 7|||Nn|||trees|||REQUIRED|||-NONE-|||1

S This cause a serious problems for animals .
A 1 2|||SVA|||causes|||REQUIRED|||-NONE-|||0
A 1 2|||SVA|||causes|||REQUIRED|||-NONE-|||1
A 2 3|||ArtOrDet||||||REQUIRED|||-NONE-|||1

S We must act imediately before it is too late .
A 3 4|||Mec|||immediately|||REQUIRED|||-NONE-|||0

S Social media has changed the way how people communicate .
A 6 7|||Rloc-||||||REQUIRED|||-NONE-|||0
A 6 7|||Rloc-||||||REQUIRED|||-NONE-|||1

S Young people spends hours on facebook every day .
A 2 3|||SVA|||spend|||REQUIRED|||-NONE-|||0
A 5 6|||Mec|||Facebook|||REQUIRED|||-NONE-|||0
A 2 3|||SVA|||spend|||REQUIRED|||-NONE-|||1
A 5 6|||Mec|||Facebook|||REQUIRED|||-NONE-|||1

S They feel lonely although they has hundreds of friends online .
A 5 6|||SVA|||have|||REQUIRED|||-NONE-|||0

S It is importent to find a balance between online and offline life .
A 2 3|||Mec|||important|||REQUIRED|||-NONE-|||0
A 2 3|||Mec|||important|||REQUIRED|||-NONE-|||1

S When I was a child , my parents doesn't allow me to watch television .
A 8 9|||Vt|||didn't|||REQUIRED|||-NONE-|||0
A 8 9|||Vt|||didn't|||REQUIRED|||-NONE-|||1

S They said me that television make children lazy .
A 1 2|||Wci|||told|||REQUIRED|||-NONE-|||0
A 5 6|||SVA|||makes|||REQUIRED|||-NONE-|||0
A 5 6|||SVA|||makes|||REQUIRED|||-NONE-|||1

S Now I am agree with them , because I see how it does to my brother .
A 2 4|||Vform|||agree|||REQUIRED|||-NONE-|||0
A 10 11|||Wci|||what|||REQUIRED|||-NONE-|||0
A 2 4|||Vform|||agree|||REQUIRED|||-NONE-|||1
A 10 11|||Wci|||what|||REQUIRED|||-NONE-|||1

S He watches cartoons whole day and never reads books .
A 3 4|||Wci|||all|||REQUIRED|||-NONE-|||0

S The population of elder people is increase in Singapore .
A 3 4|||Wform|||elderly|||REQUIRED|||-NONE-|||0
A 6 7|||Vform|||increasing|||REQUIRED|||-NONE-|||0
A 3 4|||Wform|||elderly|||REQUIRED|||-NONE-|||1
A 6 7|||Vform|||increasing|||REQUIRED|||-NONE-|||1

S Government have to spend more money on health care .
A 0 1|||ArtOrDet|||The government|||REQUIRED|||-NONE-|||0
A 1 2|||SVA|||has|||REQUIRED|||-NONE-|||0
A 0 1|||ArtOrDet|||The government|||REQUIRED|||-NONE-|||1

S Many old people lives alone and nobody takes care of them .
A 3 4|||SVA|||live|||REQUIRED|||-NONE-|||0
A 3 4|||SVA|||live|||REQUIRED|||-NONE-|||1

S The family should to support their members .
A 2 4|||Vm|||should|||REQUIRED|||-NONE-|||0
A 5 6|||Pref|||its|||REQUIRED|||-NONE-|||0
A 2 4|||Vm|||should|||REQUIRED|||-NONE-|||1

S Genetic testing can tell us many about our health .
A 5 6|||Wci|||much|||REQUIRED|||-NONE-|||0
A 5 6|||Wci|||much|||REQUIRED|||-NONE-|||1

S It helps doctors to find diseases early .

S But some people worry about there privacy .
A 5 6|||Mec|||their|||REQUIRED|||-NONE-|||0
A 5 6|||Mec|||their|||REQUIRED|||-NONE-|||1

S If the insurance company know the result , it may refuse to insure them .
A 4 5|||SVA|||knows|||REQUIRED|||-NONE-|||0

S Public transport in big cities is cheaper then driving a car .
A 6 8|||Mec|||cheaper than|||REQUIRED|||-NONE-|||0
A 6 8|||Mec|||cheaper than|||REQUIRED|||-NONE-|||1

S Buses and trains also produce less pollution than privates cars .
A 8 9|||Wform|||private|||REQUIRED|||-NONE-|||0
A 8 9|||Wform|||private|||REQUIRED|||-NONE-|||1

S However , many people still prefers to drive because it is more comfortable .
A 5 6|||SVA|||prefer|||REQUIRED|||-NONE-|||0
A 5 6|||SVA|||prefer|||REQUIRED|||-NONE-|||1

S The government should improve the public transport to attract them .
A 3 5|||ArtOrDet|||improve|||REQUIRED|||-NONE-|||0

S Last year I visited my grandmother house in the countryside .
A 5 7|||Npos|||grandmother 's house|||REQUIRED|||-NONE-|||0
A 5 7|||Npos|||grandmother 's house|||REQUIRED|||-NONE-|||1

S The air was very fresh and people were friendly .
A 6 6|||ArtOrDet|||the|||REQUIRED|||-NONE-|||0
A 6 6|||ArtOrDet|||the|||REQUIRED|||-NONE-|||1

S Every morning we goes to the market to buy vegetables .
A 3 4|||Vt|||went|||REQUIRED|||-NONE-|||0

S I have learned many things there , and I want to stay longer .
A 1 3|||Vt|||learned|||REQUIRED|||-NONE-|||0
A 9 10|||Vt|||wanted|||REQUIRED|||-NONE-|||0
A 1 3|||Vt|||learned|||REQUIRED|||-NONE-|||1
A 9 10|||Vt|||wanted|||REQUIRED|||-NONE-|||1

S Reading books is a good habit .

S It improve our vocabulary and imagination .
A 1 2|||SVA|||improves|||REQUIRED|||-NONE-|||0

S Children should read every day .

S Parents can read together their children before sleep .
A 7 8|||Wci|||bedtime|||REQUIRED|||-NONE-|||0
A 3 4|||Prep|||together with|||REQUIRED|||-NONE-|||1
A 7 8|||Wci|||bedtime|||REQUIRED|||-NONE-|||1

S Many students chooses to study abroad after finish high school .
A 2 3|||SVA|||choose|||REQUIRED|||-NONE-|||0
A 7 8|||Vform|||finishing|||REQUIRED|||-NONE-|||0
A 2 3|||SVA|||choose|||REQUIRED|||-NONE-|||1

S They can learn a new language and experience different culture .
A 8 10|||Nn|||different cultures|||REQUIRED|||-NONE-|||0
A 8 10|||Nn|||different cultures|||REQUIRED|||-NONE-|||1

S But living alone in foreign country is not easy .
A 4 5|||ArtOrDet|||a foreign|||REQUIRED|||-NONE-|||0
A 4 5|||ArtOrDet|||a foreign|||REQUIRED|||-NONE-|||1

S Some of them feels homesick and cannot focus in their studies .
A 3 4|||SVA|||feel|||REQUIRED|||-NONE-|||0
A 7 9|||Prep|||focus on|||REQUIRED|||-NONE-|||0
A 7 9|||Prep|||focus on|||REQUIRED|||-NONE-|||1

S Surveillance cameras are everywhere in our city now .

S Some people think it protect us from crime .
A 4 5|||SVA|||protects|||REQUIRED|||-NONE-|||0
A 4 5|||SVA|||protects|||REQUIRED|||-NONE-|||1

S Others argue that it invades ours privacy .
A 5 6|||Pref|||our|||REQUIRED|||-NONE-|||0
A 5 6|||Pref|||our|||REQUIRED|||-NONE-|||1

S I believe that the benefits are more than a drawbacks .
A 8 9|||ArtOrDet|||the|||REQUIRED|||-NONE-|||0

S The internet makes the information easy to find .
A 3 4|||ArtOrDet||||||REQUIRED|||-NONE-|||0
A 3 4|||ArtOrDet||||||REQUIRED|||-NONE-|||1

S However , not all of the informations online is true .
A 6 7|||Nn|||information|||REQUIRED|||-NONE-|||0
A 6 7|||Nn|||information|||REQUIRED|||-NONE-|||1

S Students should checking the sources before they use them .
A 2 3|||Vform|||check|||REQUIRED|||-NONE-|||0

S Teachers can teaches them how to do this .
A 2 3|||SVA|||teach|||REQUIRED|||-NONE-|||0
A 2 3|||SVA|||teach|||REQUIRED|||-NONE-|||1

S In the modern society , peoples is very busy .
A 1 2|||ArtOrDet||||||REQUIRED|||-NONE-|||0
A 5 6|||Nn|||people|||REQUIRED|||-NONE-|||0
A 6 7|||SVA|||are|||REQUIRED|||-NONE-|||0
A 1 2|||ArtOrDet||||||REQUIRED|||-NONE-|||1
A 6 7|||SVA|||are|||REQUIRED|||-NONE-|||1

S They doesn't have time to cooking at home .
A 1 2|||SVA|||don't|||REQUIRED|||-NONE-|||0
A 5 6|||Vform|||cook|||REQUIRED|||-NONE-|||0
A 1 2|||SVA|||don't|||REQUIRED|||-NONE-|||1

S Fast food is cheap convenient and tasty .
A 3 4|||Mec|||cheap ,|||REQUIRED|||-NONE-|||0
A 3 4|||Mec|||cheap ,|||REQUIRED|||-NONE-|||1

S But it contain too much fat and sugars .
A 2 3|||SVA|||contains|||REQUIRED|||-NONE-|||0
A 7 8|||Nn|||sugar|||REQUIRED|||-NONE-|||0
A 2 3|||SVA|||contains|||REQUIRED|||-NONE-|||1

S Climate change is one of the most biggest problems in the world .
A 6 8|||Wform|||biggest|||REQUIRED|||-NONE-|||0
A 6 8|||Wform|||biggest|||REQUIRED|||-NONE-|||1

S The temperature rise every year because of greenhouse gas .
A 2 3|||SVA|||rises|||REQUIRED|||-NONE-|||0
A 7 9|||Nn|||greenhouse gases|||REQUIRED|||-NONE-|||0
A 2 3|||SVA|||rises|||REQUIRED|||-NONE-|||1

S Many countries have agreed to reduce there emissions .
A 6 7|||Mec|||their|||REQUIRED|||-NONE-|||0
A 6 7|||Mec|||their|||REQUIRED|||-NONE-|||1

S But the progress is still too slowly .
A 6 7|||Wform|||slow|||REQUIRED|||-NONE-|||0
A 6 7|||Wform|||slow|||REQUIRED|||-NONE-|||1

S My friend Tom want to become a engineer .
A 3 4|||SVA|||wants|||REQUIRED|||-NONE-|||0
A 6 8|||ArtOrDet|||an engineer|||REQUIRED|||-NONE-|||0
A 6 8|||ArtOrDet|||an engineer|||REQUIRED|||-NONE-|||1

S He study mathematics and physics very hard even at weekends .
A 1 2|||SVA|||studies|||REQUIRED|||-NONE-|||0
A 6 7|||Mec|||hard ,|||REQUIRED|||-NONE-|||0
A 1 2|||SVA|||studies|||REQUIRED|||-NONE-|||1

S Last month he win a prize in a national competition .
A 3 4|||Vt|||won|||REQUIRED|||-NONE-|||0
A 3 4|||Vt|||won|||REQUIRED|||-NONE-|||1

S His teachers is very proud for him .
A 2 3|||SVA|||are|||REQUIRED|||-NONE-|||0
A 5 6|||Prep|||of|||REQUIRED|||-NONE-|||0
A 2 3|||SVA|||are|||REQUIRED|||-NONE-|||1

S Sports are good for our body and mind .

S Playing football with friends makes me happy .

S I play it in every weekend with my classmates .
A 3 4|||Prep|||on|||REQUIRED|||-NONE-|||0
A 3 4|||Prep|||on|||REQUIRED|||-NONE-|||1

S It is the best part of my week .
